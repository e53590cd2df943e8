// A warpgroup MMA's sum starts from 0 (start_mma_accumulators_at_zero):
// with fold_bias_into_init, or an algorithm whose accumulator starts from
// the bias, the bias is added where the sum is read, once per element.
// ptxas serialized such kernels (C7511 / C7514, "Potential Performance
// Loss") while every check passed. Numerics at ragged shapes and the
// K = 1 / K = 3 pair, the nest, and ptxas's report.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// The default 128 x 256 warpgroup tiling (two 64 x 256 warpgroups, 4
// stages, the TMA), with the bias folded into the accumulators' start.
Gemm folded(const MmaTiling &t) {
  Gemm g = coalesce::testing::bf16_scheduled(t);
  g.out.fold_bias_into_init();
  return g;
}

// The algorithm itself starts the sum from the bias:
// acc(i, j) = bias(j); acc(i, j) += A(i, k) B(k, j); out = gelu(acc).
Gemm bias_started(const MmaTiling &t) {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
  Func acc("acc"), out("out");
  acc(g.i, g.j) = g.bias(g.j);
  acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j);
  out(g.i, g.j) = cast(BFloat(16), gelu(acc(g.i, g.j)));
  g.acc = acc;
  g.out = out;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

MmaTiling wide_tiling() { return default_mma_tiling(kKind, 4096, 4096, 4096, GpuTarget().sm_count()); }

} // namespace

TEST_CASE("a bias-started warpgroup MMA sum matches the reference, the bias added once (K = 1 / K = 3, ragged)") {
  for (const MmaTiling &t : {wide_tiling(), coalesce::testing::one_tile_tma_tiling(kKind)}) {
    INFO(t.str());
    for (Gemm g : {folded(t), bias_started(t)}) {
      Pipeline pipeline(g.out);
      for (auto [M, N, K] : std::vector<std::array<int, 3>>{{67, 45, 1}, {67, 45, 3}, {130, 264, 136}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, Epilogue::BiasGelu, 21) < 4e-3);
      }
    }
  }
}

TEST_CASE("the nest starts the MMA's accumulators from 0 and adds the bias in the epilogue") {
  for (Gemm g : {folded(wide_tiling()), bias_started(wide_tiling())}) {
    std::string nest = Pipeline(g.out).loop_nest();
    CHECK_HAS(nest, "acc[warp, lane, 0, nj, fi, fj] = 0.0f");
    CHECK(nest.find("acc[warp, lane, 0, nj, fi, fj] = bias[") == std::string::npos);
    // The default stages the sums (the accumulators as they are) and adds
    // the bias, read clamped into the input once per thread, in the
    // copy-out's epilogue.
    CHECK_HAS(nest, "acc_tile[i - bi*128, j - bj*256] = acc[warp, lane, 0, nj, fi, fj]\n");
    CHECK_HAS(nest, "out_tile.read0[out_tile_lane] = bias[max(min(");
    CHECK_HAS(nest, "] = bf16(0.5f*(acc_tile[flat/32, (warp*32 + lane) % 32*8 + out_tile_lane] + out_tile.read0[");
  }
}

TEST_CASE("ptxas keeps the MMAs of a bias-started sum in flight: no performance loss reported") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  for (Gemm g : {folded(wide_tiling()), bias_started(wide_tiling())}) {
    Pipeline pipeline(g.out);
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
}

TEST_CASE("a bias-started warpgroup sum compiles to the very kernel of the plain schedule, which the GPU check runs") {
  const MmaTiling t = wide_tiling();
  const std::string plain = Pipeline(coalesce::testing::bf16_scheduled(t).out).ptx();
  CHECK(Pipeline(folded(t).out).ptx() == plain);
  CHECK(Pipeline(bias_started(t).out).ptx() == plain);
}
