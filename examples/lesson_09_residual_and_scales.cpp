// Lesson 9: epilogues that read more than the sum: a residual, and scales.
//
// The epilogue is any expression of the finished sum and of inputs read at
// the output's coordinates. Two that transformer layers use:
//
//   out(i, j) = bf16(gelu(acc(i, j) + bias(j)) + residual(i, j))
//   out(i, j) = bf16(acc(i, j) * alpha(j) + beta(0) * C(i, j))
//
// (examples/ResidualGemm.h writes them). alpha scales each output channel,
// beta is read at run time from a one-element input, C and residual are
// M x N. The schedule is the tensor-core one with the library's tiling, as
// for a plain bias + GELU: the epilogue is fused after the reduction, so
// it runs once per element on the complete sum. The extra inputs are read
// in the epilogue only, where each thread holds its elements.
//
// On the CPU the same statements run; the lesson checks both epilogues on
// the warp MMA and the warpgroup MMA against the double reference at a
// ragged shape and at K = 0, 1 and 3 (an epilogue applied inside the
// reduction would agree at K = 1 only).

#include "examples/LessonSupport.h"
#include "examples/ResidualGemm.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

const int kShapes[][3] = {{70, 75, 37}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}};

bool check(Pipeline &pipeline, ExtraEpilogue e, int M, int N, int K, const char *what) {
  ExtraEpilogueData data(M, N, K, 77);
  Buffer out({M, N}, BFloat(16));
  out.poison();
  pipeline.realize_on_cpu(data.arguments(e), out);
  Buffer got = widened(out);
  double error = relative_error(got, data.reference(e));
  bool ok = error < kBf16OutputTolerance && count_nan(got) == 0;
  std::printf("%dx%dx%d, %s, %s: relative error %.3g (tolerance %.3g), unwritten %zu -> %s\n", M, N, K,
              extra_epilogue_name(e), what, error, kBf16OutputTolerance, count_nan(got), ok ? "ok" : "MISMATCH");
  return ok;
}

} // namespace

int main() {
  return run_lesson([] {
    bool ok = true;
    for (ExtraEpilogue e : {ExtraEpilogue::Residual, ExtraEpilogue::Scaled})
      for (auto [kind, what] : {std::pair{MmaKind::BF16_m16n8k16, "warp MMA"},
                                std::pair{MmaKind::BF16_wgmma_m64k16, "warpgroup MMA"}}) {
        ExtraEpilogueGemm g = make_extra_epilogue_gemm(e);
        // The library's tiling for 4096^3 on an H200 (132 SMs).
        schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_mma_tiling(kind, 4096, 4096, 4096, 132));
        Pipeline pipeline(g.out);
        if (kind == MmaKind::BF16_wgmma_m64k16 && e == ExtraEpilogue::Residual)
          print_loop_nest("out = gelu(A B + bias) + residual on the warpgroup MMA", pipeline);
        for (const auto &shape : kShapes)
          ok &= check(pipeline, e, shape[0], shape[1], shape[2], what);
      }
    return ok;
  });
}
