// What the autotuner compares are schedules of one algorithm: every family
// it searches (FFMA, warp MMA, warpgroup MMA), with knobs away from the
// defaults, computes the problem's result, checked on the CPU against the
// naive double-precision reference at a ragged shape (M not a multiple of
// any tile), at the tolerance the GPU check uses (tuning_tolerance).

#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/GemmCandidate.h"
#include "runtime/GpuCandidateTiming.h"
#include "NarrowOutputError.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr int M = 200, N = 136, K = 72;

Epilogue epilogue_of(const std::string &name) {
  for (Epilogue e : {Epilogue::None, Epilogue::Bias, Epilogue::BiasRelu, Epilogue::BiasGelu, Epilogue::BiasGeluTanh})
    if (name == epilogue_name(e))
      return e;
  FAIL("unknown epilogue ", name);
  return Epilogue::None;
}

GemmProblem problem(const std::string &dtype, const std::string &epilogue) {
  GemmProblem p;
  p.dtype = dtype;
  p.out_dtype = dtype == "tf32" ? "f32" : dtype;
  p.epilogue = epilogue;
  p.M = M;
  p.N = N;
  p.K = K;
  return p;
}

double error_of(const GemmProblem &p, const GemmCandidate &candidate) {
  Pipeline pipeline(build_scheduled_gemm(p, candidate));
  Epilogue e = epilogue_of(p.epilogue);
  GemmData data = make_data(M, N, K, 5, gemm_input_type(p));
  return coalesce::testing::cpu_error_against_reference(pipeline, data, M, N, K, e, gemm_output_type(p));
}

} // namespace

TEST_CASE("tuned FFMA candidates compute the problem's result") {
  GemmProblem p = problem("f32", "bias_gelu_tanh");
  // 4 x 4 register blocks: quick to compile for the host (the default
  // tilings are checked numerically in test_numerics and test_wgmma).
  std::vector<GemmCandidate> list;
  GemmCandidate grouped;
  grouped.ffma.block_m = 64;
  grouped.ffma.block_n = 64;
  grouped.ffma.threads_m = 16;
  grouped.ffma.threads_n = 16;
  grouped.ffma.k_step = 16;
  grouped.ffma.block_group_rows = 2;
  list.push_back(grouped);
  GemmCandidate split = grouped;
  split.ffma.block_group_rows = 0;
  split.ffma.split_k = 3;
  list.push_back(split);
  for (const GemmCandidate &c : list) {
    CAPTURE(c.str());
    CHECK(error_of(p, c) <= tuning_tolerance(p));
  }
}

TEST_CASE("tuned tensor-core candidates, warp and warpgroup, compute the problem's result") {
  {
    GemmProblem p = problem("bf16", "bias_relu");
    GemmCandidate warp = default_gemm_candidate(p, "sm_80");
    REQUIRE(warp.family == GemmFamily::WarpMma);
    warp.mma.block_m = warp.mma.block_n = 64;
    warp.mma.warp_m = warp.mma.warp_n = 32;
    warp.mma.stages = 3;
    warp.mma.block_group_rows = 2;
    CAPTURE(warp.str());
    CHECK(error_of(p, warp) <= tuning_tolerance(p));
  }
  GemmProblem p = problem("bf16", "bias_gelu");
  GemmCandidate group = default_gemm_candidate(p, "sm_90a");
  REQUIRE(group.family == GemmFamily::WarpgroupMma);
  group.mma.block_m = group.mma.block_n = 64;
  group.mma.warp_m = group.mma.warp_n = 64;
  group.mma.stages = 4;
  group.mma.min_blocks_per_sm = 1;
  CAPTURE(group.str());
  CHECK(error_of(p, group) <= tuning_tolerance(p));
}

TEST_CASE("a tuned candidate for B stored N x K (nn.Linear's weight) computes A B^T") {
  GemmProblem p = problem("bf16", "bias_gelu");
  p.b_layout = GemmBLayout::NK;
  GemmCandidate group = default_gemm_candidate(p, "sm_90a");
  REQUIRE(group.family == GemmFamily::WarpgroupMma);
  group.mma.block_m = group.mma.block_n = 64;
  group.mma.warp_m = group.mma.warp_n = 64;
  group.mma.stages = 3;
  group.mma.split_k = 2;
  CAPTURE(group.str());
  Pipeline pipeline(build_scheduled_gemm(p, group));
  GemmData data = make_data(M, N, K, 9, BFloat(16));
  GemmData stored = data; // B N x K: the same values, transposed
  stored.b = Buffer({N, K}, BFloat(16));
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      stored.b.set(j, k, data.b.at(k, j));
  CHECK(coalesce::testing::cpu_error_against_reference(pipeline, stored, data, M, N, K, Epilogue::BiasGelu,
                                                        BFloat(16)) <= tuning_tolerance(p));
  // Read as K x N, the same values give another result: the layout is read.
  GemmProblem kn = p;
  kn.b_layout = GemmBLayout::KN;
  CHECK(pipeline.loop_nest() != Pipeline(build_scheduled_gemm(kn, group)).loop_nest());
}
