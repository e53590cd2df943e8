// K = 0, computed as cuBLAS and PyTorch compute it: the reduction adds
// nothing, so acc keeps its initial value (0, or the folded bias) and the
// epilogue runs once on it: out = epilogue(bias). Every schedule computes it
// (plain, the default FP32 GEMM schedule with its double-buffered and
// pipelined staging, the tensor-core schedule), on the CPU against the
// reference; an empty input that a definition would read outside an empty
// reduction is still a UserError naming it.

#include "dsl/FuncContents.h"
#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "ErrorCapture.h"

#include <doctest/doctest.h>

#include <functional>

using namespace coalesce;
using namespace coalesce::examples;
using testing::user_error_of;

namespace {

using Scheduler = std::function<void(Gemm &)>;

// out = epilogue(bias) at K = 0, element for element, at a few shapes (one
// ragged against every tile); the data's A and B are empty.
void check_k0(Epilogue e, Type in, const Scheduler &schedule, bool fold_bias = false) {
  Gemm g = make_gemm(e, in, Float(32));
  if (fold_bias)
    g.out.fold_bias_into_init();
  schedule(g);
  Pipeline pipeline(g.out);
  for (auto [M, N] : {std::array<int, 2>{1, 1}, {37, 45}, {64, 64}}) {
    CAPTURE(M);
    CAPTURE(N);
    GemmData data = make_data(M, N, 0, 11, in);
    Buffer out({M, N});
    out.poison();
    pipeline.realize_on_cpu(gemm_arguments(data, M, N, 0, e), out);
    CHECK(count_nan(out) == 0);
    CHECK(relative_error(out, reference(data, M, N, 0, e)) < 1e-6);
  }
  // The same pipeline still sums at K > 0.
  GemmData data = make_data(37, 45, 19, 12, in);
  Buffer out({37, 45});
  pipeline.realize_on_cpu(gemm_arguments(data, 37, 45, 19, e), out);
  // tf32 rounds f32 inputs to 10 bits of mantissa: 2^-11 relative per term.
  bool tf32 = g.acc.contents()->schedule.stages.back().mma.kind == MmaKind::TF32_m16n8k8;
  CHECK(relative_error(out, reference(data, 37, 45, 19, e)) < (tf32 ? 2e-3 : 1e-5));
}

void unscheduled(Gemm &) {}

GemmTiling small_gemm_tiling(bool async_copy, int stages = 2) {
  GemmTiling t;
  t.block_m = t.block_n = 32;
  t.threads_m = t.threads_n = 8;
  t.k_step = 8;
  t.stages = stages;
  t.async_copy = async_copy;
  return t;
}

Scheduler fp32_schedule(GemmTiling t) {
  return [t](Gemm &g) { schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t); };
}

Scheduler mma_schedule(MmaKind kind, int stages) {
  return [kind, stages](Gemm &g) {
    MmaTiling t;
    t.kind = kind;
    t.block_m = t.block_n = 64;
    t.warp_m = t.warp_n = 32;
    t.k_step = 16;
    t.stages = stages;
    if (is_warpgroup_mma(kind)) {
      t = default_mma_tiling(kind, 64, 64, GpuTarget().sm_count());
      t.block_m = t.block_n = t.warp_n = 64;
      t.stages = stages;
    }
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  };
}

} // namespace

TEST_CASE("K = 0 without a schedule: bias + GELU, bias only, no epilogue, folded bias") {
  check_k0(Epilogue::BiasGelu, Float(32), unscheduled);
  check_k0(Epilogue::Bias, Float(32), unscheduled);
  check_k0(Epilogue::None, Float(32), unscheduled);
  check_k0(Epilogue::BiasGelu, Float(32), unscheduled, true);
  check_k0(Epilogue::Bias, Float(32), unscheduled, true);
}

TEST_CASE("K = 0 with the default FP32 GEMM schedule: double buffered through registers and with cp.async") {
  for (bool async_copy : {true, false}) {
    CAPTURE(async_copy);
    check_k0(Epilogue::BiasGelu, Float(32), fp32_schedule(small_gemm_tiling(async_copy)));
    check_k0(Epilogue::None, Float(32), fp32_schedule(small_gemm_tiling(async_copy)));
    check_k0(Epilogue::BiasGelu, Float(32), fp32_schedule(small_gemm_tiling(async_copy)), true);
  }
  // The shape-aware default tiling, as the AOT tool and the benchmark use it.
  check_k0(Epilogue::Bias, Float(32), fp32_schedule(default_gemm_tiling(64, 64, 0, GpuTarget().sm_count())));
}

TEST_CASE("K = 0 with the FP32 GEMM schedule: one tile, and 3- and 4-stage pipelines") {
  check_k0(Epilogue::BiasGelu, Float(32), fp32_schedule(small_gemm_tiling(false, 1)));
  for (int stages : {3, 4}) {
    CAPTURE(stages);
    check_k0(Epilogue::BiasGelu, Float(32), fp32_schedule(small_gemm_tiling(true, stages)));
    check_k0(Epilogue::Bias, Float(32), fp32_schedule(small_gemm_tiling(true, stages)), true);
  }
}

TEST_CASE("K = 0 with the tensor-core schedule: double buffered and 3- and 4-stage pipelines") {
  for (int stages : {2, 3, 4}) {
    CAPTURE(stages);
    check_k0(Epilogue::BiasGelu, BFloat(16), mma_schedule(MmaKind::BF16_m16n8k16, stages));
    check_k0(Epilogue::None, Float(16), mma_schedule(MmaKind::F16_m16n8k16, stages));
    check_k0(Epilogue::Bias, Float(32), mma_schedule(MmaKind::TF32_m16n8k8, stages));
  }
  check_k0(Epilogue::BiasGelu, BFloat(16), mma_schedule(MmaKind::BF16_m16n8k16, 2), true);
}

TEST_CASE("K = 0 with the warpgroup MMA schedule: double buffered, and pipelines whose first step is peeled") {
  for (int stages : {2, 3, 4}) {
    CAPTURE(stages);
    check_k0(Epilogue::BiasGelu, BFloat(16), mma_schedule(MmaKind::BF16_wgmma_m64k16, stages));
    check_k0(Epilogue::None, Float(16), mma_schedule(MmaKind::F16_wgmma_m64k16, stages));
    check_k0(Epilogue::BiasGelu, BFloat(16), mma_schedule(MmaKind::BF16_wgmma_m64k16, stages), true);
  }
}

TEST_CASE("a double-buffered copy of the first tile runs only when the staged inputs have elements") {
  Gemm g = make_gemm(Epilogue::Bias);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, small_gemm_tiling(false));
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "if 0 < M && 0 < K && 0 < N:");
}

TEST_CASE("an empty input read outside an empty reduction is rejected, naming it and its reader") {
  // C is read by the pure definition at a fixed place, so C = {} with a
  // non-empty output would be read outside its (empty) extent.
  Param N("N"), P("P");
  Input A("A", Float(32), {N}), C("C", Float(32), {P});
  Var i("i");
  Func out("out");
  out(i) = A(i) + C(0);
  Buffer a({4}), c({0}), o({4});
  std::string message = user_error_of([&] { Pipeline(out).realize_on_cpu({{"A", a}, {"C", c}, {"N", 4}, {"P", 0}}, o); });
  CHECK_HAS(message, "buffer 'C' would have extent 0 (P)");
  CHECK_HAS(message, "'out' reads it");
  CHECK_HAS(message, "empty reduction range (K = 0)");
}
