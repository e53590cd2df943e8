// gpu_persistent_blocks: the output's tiles on a grid of at most P blocks,
// each walking the tiles P apart. The CPU runs the same loops against the
// double reference, with fewer blocks than tiles and more, at ragged
// shapes, with grouped blocks, and the K = 1 / K = 3 pair; the nest; the
// kernel through ptxas; the rules.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
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

MmaTiling persistent_tiling(int blocks, int group_rows = 0) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind, 3);
  t.persistent_blocks = blocks;
  t.block_group_rows = group_rows;
  return t;
}

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 13);
}

} // namespace

TEST_CASE("a persistent grid computes every tile once: fewer blocks than tiles, more, grouped, ragged") {
  for (auto [blocks, groups] : std::vector<std::array<int, 2>>{{3, 0}, {1, 0}, {100, 0}, {4, 2}}) {
    CAPTURE(blocks);
    CAPTURE(groups);
    Gemm g = coalesce::testing::bf16_scheduled(persistent_tiling(blocks, groups));
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{200, 200, 70}, {64, 64, 64}, {130, 70, 131}, {1, 1, 1}}) {
      CAPTURE(M);
      CAPTURE(N);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
  // The FFMA schedule: the same pass on its block loops.
  GemmTiling f;
  f.block_m = f.block_n = 64;
  Gemm h = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(h.out, h.acc, h.A, h.B, h.i, h.j, h.k, f);
  h.out.gpu_persistent_blocks(5);
  Pipeline ffma(h.out);
  GemmData data = make_data(300, 130, 40, 3);
  CHECK(coalesce::testing::cpu_error_against_reference(ffma, data, 300, 130, 40, Epilogue::BiasGelu, Float(32)) <
        1e-5);
}

TEST_CASE("on a persistent grid the fused epilogue still runs once per tile, after its reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(persistent_tiling(3), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 200, 136, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the nest shows the persistent blocks and the tiles each walks") {
  Gemm g = coalesce::testing::bf16_scheduled(persistent_tiling(3));
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "for bi_persistent in gpu_block.x(0, min(ceil(M/64)*(ceil(N/64)), 3)):");
  CHECK_HAS(nest, "# the tiles of this block of a persistent grid");
  CHECK_HAS(nest, "let tile_index = bi_persistent + bi_tile*3");
  CHECK_HAS(nest, "let bi = tile_index/(ceil(N/64))");
  CHECK_HAS(nest, "let bj = tile_index % (ceil(N/64))");
  CHECK(nest.find("gpu_block.y") == std::string::npos);
}

TEST_CASE("a persistent warpgroup kernel assembles cleanly") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
  t.persistent_blocks = GpuTarget().sm_count();
  stage_values_where_sums_do_not_fit(t);
  fit_output_tile_beside_stages(t); // the tile loop keeps the slots live beside the output tile: three stages
  CHECK(t.stages == 3);
  Gemm g = coalesce::testing::bf16_scheduled(t);
  coalesce::testing::check_assembled_cleanly(Pipeline(g.out).assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("gpu_persistent_blocks is refused where it cannot apply") {
  using coalesce::testing::user_error_of;
  Gemm g = coalesce::testing::bf16_scheduled(persistent_tiling(3));
  CHECK_HAS(user_error_of([&] { g.out.gpu_persistent_blocks(0); }), "it must be between 1 and 65535 blocks");
  Gemm h = coalesce::testing::bf16_scheduled(persistent_tiling(0));
  h.acc.gpu_persistent_blocks(4);
  CHECK_HAS(user_error_of([&] { Pipeline(h.out).loop_nest(); }),
            "gpu_persistent_blocks sizes the grid of the output's kernels; 'acc' is not the output");
  MmaTiling split = persistent_tiling(3);
  split.split_k = 2;
  Gemm s = coalesce::testing::bf16_scheduled(split);
  CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }), "no block loop inside (split_k adds one)");
  Gemm n = make_gemm(Epilogue::None);
  n.out.gpu_persistent_blocks(2);
  CHECK_HAS(user_error_of([&] { Pipeline(n.out).loop_nest(); }), "no loop of 'out' is mapped to GPU blocks");
}
