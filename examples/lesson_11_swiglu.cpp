// Lesson 11: a SwiGLU MLP's gate and up projections in one loop nest,
// y = bf16(silu(x Wg^T) * (x Wu^T)).
//
// Two reductions over the same x, then an epilogue that needs both:
//   g(i, j) += x(i, k) * Wg(j, k);   u(i, j) += x(i, k) * Wu(j, k);
//   y(i, j) = bf16(silu(g(i, j)) * u(i, j)).
// Computed as two GEMMs, x is read twice and g and u go through memory.
// Here both are computed on y's tile (fuse_epilogue), and
// u.fuse_reduction_with(g) merges their update loops: one k loop reads each
// x(i, k) once for both sums. The epilogue still runs once, after both
// sums are complete; each sum keeps its own order, so the result is the
// same as two separate nests'.
//
// This lesson checks the CPU run against the double reference at a ragged
// shape and at K = 1 and K = 3; the same schedule, and staged forms of it,
// run on the GPU (coalesce-gpu-check checks them on the H200). On tensor
// cores, schedule_fused_gemms_mma (dsl/recipes/GemmMmaSchedule.h) feeds
// each tile of x to both sums' instructions; the lesson checks that
// schedule on the CPU too.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

struct SwiGlu {
  Input x, Wg, Wu;
  Func y;
};

// FFMA: the schedule spelled out below. Tensor cores: Hopper's warpgroup
// MMA, one tile of x feeding one instruction per sum.
enum class Engine { Ffma, TensorCores };

SwiGlu swiglu(Engine engine) {
  Param M("M"), N("N"), K("K");
  SwiGlu s{Input("x", BFloat(16), {M, K}), Input("Wg", BFloat(16), {N, K}), Input("Wu", BFloat(16), {N, K}),
           Func("y")};
  Var i("i"), j("j"), bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RDom k(0, K, "k");
  RVar ko("ko"), ki("ki");
  Func g("g"), u("u");
  g(i, j) = 0.0f;
  g(i, j) += s.x(i, k) * s.Wg(j, k);
  u(i, j) = 0.0f;
  u(i, j) += s.x(i, k) * s.Wu(j, k);
  s.y(i, j) = cast(BFloat(16), silu(g(i, j)) * u(i, j));

  if (engine == Engine::TensorCores) {
    // Both sums on 128 x 128 tiles of two 64 x 128 warpgroups (128
    // accumulators per thread for the pair), x, Wg and Wu copied by the
    // TMA, u.fuse_reduction_with(g) included.
    schedule_fused_gemms_mma(s.y, g, s.Wg, u, s.Wu, s.x, i, j, k,
                             default_fused_gemms_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 11008, 132));
    return s;
  }
  // 32 x 32 tiles, 16 x 16 threads with 2 x 2 outputs each; both sums on
  // the tile, their k loops split and ordered alike, then merged.
  s.y.tile(i, j, bi, bj, ii, jj, 32, 32).gpu_blocks({bi, bj}).register_block(ii, jj, ti, tj, ri, rj, 2, 2).gpu_threads(
      {ti, tj});
  s.y.fuse_epilogue(g, bj);
  s.y.fuse_epilogue(u, bj);
  for (Func *f : {&g, &u})
    f->update().split(k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
  u.fuse_reduction_with(g);
  return s;
}

bool check(Pipeline &pipeline, int M, int N, int K) {
  Buffer x({M, K}, BFloat(16)), Wg({N, K}, BFloat(16)), Wu({N, K}, BFloat(16)), y({M, N}, BFloat(16));
  x.fill_random(1);
  Wg.fill_random(2);
  Wu.fill_random(3);
  y.poison();
  pipeline.realize_on_cpu({{"x", x}, {"Wg", Wg}, {"Wu", Wu}, {"M", M}, {"N", N}, {"K", K}}, y);
  Buffer got({M, N}), want({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double g = 0, u = 0;
      for (int k = 0; k < K; ++k) {
        g += double(x.at(i, k)) * double(Wg.at(j, k));
        u += double(x.at(i, k)) * double(Wu.at(j, k));
      }
      want(i, j) = float(g / (1.0 + std::exp(-g)) * u);
      got(i, j) = y.at(i, j);
    }
  return bf16_output_matches(M, N, K, got, want);
}

// Ragged (K not a multiple of the split), then K = 1 and K = 3: an
// epilogue inside either reduction would agree at K = 1 only.
const int kShapes[][3] = {{70, 75, 37}, {67, 45, 1}, {67, 45, 3}};

} // namespace

int main() {
  return run_lesson([] {
    SwiGlu s = swiglu(Engine::Ffma);
    Pipeline pipeline(s.y);
    print_loop_nest("y = silu(x Wg^T) * (x Wu^T), both reductions in one k loop", pipeline);
    bool ok = true;
    for (const auto &shape : kShapes)
      ok &= check(pipeline, shape[0], shape[1], shape[2]);
    // The same algorithm on tensor cores, run here on the CPU (the
    // statement the GPU runs, with the instructions' per-step order).
    std::cout << "---- on tensor cores: schedule_fused_gemms_mma ----\n";
    SwiGlu on_tensor_cores = swiglu(Engine::TensorCores);
    Pipeline mma(on_tensor_cores.y);
    for (const auto &shape : kShapes)
      ok &= check(mma, shape[0], shape[1], shape[2]);
    return ok;
  });
}
