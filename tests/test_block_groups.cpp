// gpu_block_groups: the output's blocks in groups of block rows. A
// permutation of the blocks, so every grouped schedule must compute what
// the plain one computes, at shapes whose last group is short and with the
// K = 1 / K = 3 pair; the loop nest shows the grouping; misuse is rejected.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "ErrorCapture.h"
#include "codegen/PtxAssembler.h"
#include "NarrowOutputError.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

GemmTiling small_ffma_tiling() {
  GemmTiling t = default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count());
  t.block_m = t.block_n = 32;
  t.threads_m = t.threads_n = 8;
  return t;
}

} // namespace

TEST_CASE("grouped blocks compute what row-by-row blocks compute, ragged shapes and K = 1 / 3 included") {
  for (int rows : {1, 2, 3, 8}) {
    CAPTURE(rows);
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, small_ffma_tiling());
    g.out.gpu_block_groups(rows);
    Pipeline pipeline(g.out);
    // 7 x 5 blocks of 32 x 32: groups of 2, 3 or 8 rows leave a short last group.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {200, 150, 37}, {70, 66, 1}, {70, 66, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      GemmData data = make_data(M, N, K, 3);
      Buffer out({M, N});
      out.poison();
      pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
      CHECK(count_nan(out) == 0);
      CHECK(relative_error(out, reference(data, M, N, K, Epilogue::BiasGelu)) < 1e-5);
    }
  }
}

TEST_CASE("grouped blocks on a warpgroup MMA schedule match the reference") {
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 64, 64, GpuTarget().sm_count());
  t.block_m = t.block_n = t.warp_n = 64;
  Gemm g = make_gemm(Epilogue::BiasRelu, BFloat(16), BFloat(16));
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  g.out.gpu_block_groups(2);
  Pipeline pipeline(g.out);
  const int M = 200, N = 140, K = 70;
  GemmData data = make_data(M, N, K, 9, BFloat(16));
  CHECK(coalesce::testing::cpu_error_against_reference(pipeline, data, M, N, K, Epilogue::BiasRelu, BFloat(16)) <
        4e-3);
}

TEST_CASE("the loop nest shows the grouped block order, and the kernel assembles") {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
  g.out.gpu_block_groups(8);
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "for bi_grouped in gpu_block.y(0, ceil(M/128)):");
  CHECK_HAS(nest, "for bj_grouped in gpu_block.x(0, ceil(N/128)):");
  CHECK_HAS(nest, "let linear = bi_grouped*(ceil(N/128)) + bj_grouped");
  CHECK_HAS(nest, "let bi = linear/(ceil(N/128)*8)*8 + linear % (ceil(N/128)*8) % group_rows");
  if (ptxas_available()) {
    PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
    REQUIRE(assembled.kernels.size() == 1);
    CHECK_FALSE(assembled.kernels.front().spills());
  }
}

TEST_CASE("gpu_block_groups is rejected where it has no two block loops to order, or out of range") {
  using coalesce::testing::user_error_of;
  SUBCASE("out of range") {
    Gemm g = make_gemm(Epilogue::None);
    CHECK_HAS(user_error_of([&] { g.out.gpu_block_groups(0); }), "must be between 1 and 1024");
  }
  SUBCASE("not the output") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, small_ffma_tiling());
    g.acc.gpu_block_groups(4);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "is not the output");
  }
  SUBCASE("no block loops") {
    Gemm g = make_gemm(Epilogue::None);
    g.out.gpu_block_groups(4);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "no loop of 'out' is mapped to GPU blocks");
  }
  SUBCASE("a loop name the grouped order would take") {
    Gemm g = make_gemm(Epilogue::None);
    Var bi("bi"), bi_grouped("bi_grouped"), ii("ii"), jo("jo"), ji("ji");
    g.out.split(g.i, bi, ii, 16).split(ii, bi_grouped, Var("iii"), 4).split(g.j, jo, ji, 16)
        .reorder({bi, jo, bi_grouped, Var("iii"), ji}).gpu_blocks({bi, jo});
    g.out.gpu_block_groups(2);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "names its block loops 'bi_grouped'");
  }
  SUBCASE("one block loop") {
    Gemm g = make_gemm(Epilogue::None);
    Var io("io"), ii("ii");
    g.out.split(g.i, io, ii, 16).gpu_blocks({io});
    g.out.gpu_block_groups(4);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "needs exactly two block loops");
  }
}
