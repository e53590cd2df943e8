// Lesson 7: tensor cores (warp MMA), in bf16 and in tf32.
//
// The algorithm is lesson 5's, with 16-bit data: A and B are bf16, the
// products and the sum are f32 (each input widened exactly), and out is
// rounded once to bf16:
//   acc(i, j) += A(i, k) * B(k, j);  out(i, j) = bf16(gelu(acc(i, j) + bias(j))).
// Only the schedule changes. Three primitives map it onto mma.sync:
//
// - out.mma_tile(ii, jj, kind, 32, 32, warp, lane, mi, nj, fi, fj) lays the
//   block tile out in 32 x 32 warp tiles of 16 x 8 instruction tiles. Lane
//   `lane` of a warp owns rows lane/4 and lane/4 + 8 (fi = 0, 1) and columns
//   2 (lane % 4) + fj (fj = 0, 1) of each instruction tile: the accumulator
//   fragment of the instruction. It maps warp and lane to GPU threads (it
//   fuses two loops into each with Stage::fuse) and unrolls the rest.
// - out.fuse_epilogue(acc, bj), as in lesson 5: acc lives in registers on
//   out's tile, so the epilogue reads the finished fragments.
// - acc.update().mma(k, ko, kk, k_step) splits k into steps of k_step and
//   instruction steps kk, and makes each (instruction tile, kk) one warp MMA.
//   The instruction sums the products of a step in its own order, so the
//   stage must say allow_reassociation().
//
// A and B are staged in shared memory with zero_fill copies: at a
// ragged K the last step overhangs the inputs, and an instruction cannot
// skip elements, so those elements must read as 0 (clamping would add the
// edge values again). On the CPU the same WarpMma statements run, one lane
// at a time, which is what this lesson checks.
//
// The tf32 variant keeps f32 inputs and lets the m16n8k8 instruction round
// them to tf32 (10-bit mantissa, to nearest, ties away from zero). Checked
// against the double reference on inputs rounded to tf32 first, it agrees
// to f32 precision; on the unrounded inputs it is off by tf32's rounding.

#include "examples/LessonSupport.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"


using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr int kBlock = 64, kWarp = 32;

// The tensor-core schedule, written with the primitives.
void schedule(Gemm &g, MmaKind kind, int k_step) {
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, kBlock, kBlock)
      .gpu_blocks({bi, bj})
      .mma_tile(ii, jj, kind, kWarp, kWarp, warp, lane, mi, nj, fi, fj);
  g.out.fuse_epilogue(g.acc, bj);
  g.out.gpu_min_blocks_per_sm(2);
  // Zero past the inputs' ends; 8 elements of padding per staged row keep
  // the fragment reads of one warp in different banks; double buffered.
  SharedLayout layout;
  layout.padding = 8;
  AsyncCopies copies;
  copies.zero_fill = true;
  RVar ko("ko"), kk("kk");
  g.acc.update()
      .mma(g.k, ko, kk, k_step)
      .allow_reassociation()
      .stage_in_shared(g.A, ko, layout, copies)
      .stage_in_shared(g.B, ko, layout, copies);
}

// The same schedule through the library's helper (what coalesce-main runs,
// with larger tiles): the lesson's nest must be the helper's.
bool matches_helper(MmaKind kind, int k_step, Type in, Type out, const Pipeline &pipeline) {
  Gemm g = make_gemm(Epilogue::BiasGelu, in, out);
  MmaTiling t;
  t.kind = kind;
  t.block_m = t.block_n = kBlock;
  t.warp_m = t.warp_n = kWarp;
  t.k_step = k_step;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  if (Pipeline(g.out).loop_nest() == pipeline.loop_nest())
    return true;
  std::cout << "MISMATCH: this schedule differs from schedule_gemm_mma with " << t.str() << "\n";
  return false;
}

void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
}

// Runs on the CPU (output poisoned first) and compares with the double
// reference; a bf16 output is widened to f32 for the comparison.
bool check(Pipeline &pipeline, const GemmData &data, int M, int N, int K, Type out_type, double tolerance,
           const char *what) {
  Buffer out({M, N}, out_type);
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
  Buffer wide({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      wide(i, j) = out.at(i, j);
  double error = relative_error(wide, reference(data, M, N, K, Epilogue::BiasGelu));
  bool ok = error < tolerance;
  std::printf("%dx%dx%d, %s: relative error %.3g (tolerance %.3g), unwritten %zu -> %s\n", M, N, K, what, error,
              tolerance, count_nan(wide), ok ? "ok" : "MISMATCH");
  return ok;
}

// A ragged shape (no dimension a multiple of the tiles or the k step), then
// K = 1 and K = 3: a single partial step, all of it zero-filled past K.
const int kShapes[][3] = {{70, 75, 37}, {67, 45, 1}, {67, 45, 3}};

} // namespace

int main() {
  return run_lesson([] {
    bool ok = true;
    {
      // bf16 in, bf16 out. The tolerance is 2^-8: twice the bf16 output's
      // rounding (half an ulp is at most 2^-9 of the value); the f32 sum
      // adds far less.
      Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
      schedule(g, MmaKind::BF16_m16n8k16, 32);
      Pipeline pipeline(g.out);
      print_loop_nest("bf16_mma: bf16 GEMM + bias + GELU on mma.sync m16n8k16, bf16 out", pipeline);
      ok &= matches_helper(MmaKind::BF16_m16n8k16, 32, BFloat(16), BFloat(16), pipeline);
      for (const auto &s : kShapes) {
        GemmData data = make_data(s[0], s[1], s[2], 2024, BFloat(16));
        ok &= check(pipeline, data, s[0], s[1], s[2], BFloat(16), 0x1p-8, "bf16 vs double reference");
      }
    }
    {
      // f32 in and out on the tf32 instruction. On inputs already rounded
      // to tf32 the instruction's rounding changes nothing, and the result
      // agrees with the double reference to f32 precision (1e-5).
      Gemm g = make_gemm(Epilogue::BiasGelu);
      schedule(g, MmaKind::TF32_m16n8k8, 16);
      Pipeline pipeline(g.out);
      print_loop_nest("tf32_mma: f32 GEMM + bias + GELU on mma.sync m16n8k8 (tf32)", pipeline);
      ok &= matches_helper(MmaKind::TF32_m16n8k8, 16, Float(32), Float(32), pipeline);
      for (const auto &s : kShapes) {
        GemmData data = make_data(s[0], s[1], s[2], 2024);
        round_to_tf32(data.a);
        round_to_tf32(data.b);
        ok &= check(pipeline, data, s[0], s[1], s[2], Float(32), kTolerance, "tf32 data vs double reference");
      }
      // On the unrounded f32 inputs the error is tf32's input rounding
      // (up to 2^-11 of each input): shown, checked against 2^-10.
      GemmData data = make_data(70, 75, 37, 2024);
      ok &= check(pipeline, data, 70, 75, 37, Float(32), 0x1p-10, "f32 data vs double reference");
    }
    return ok;
  });
}
