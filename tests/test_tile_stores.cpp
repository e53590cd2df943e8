// gpu_tile_stores(TileStores::ThroughShared) (StageOutputTiles.h): a block
// writes its tile into a shared tile and copies the vectors inside the
// output out in 16 bytes each, also on the ragged edge; outputs whose rows
// are not whole 16-byte multiples copy it out element by element. The
// epilogue's expression appears once. The CPU runs
// the same statements against the double reference at ragged shapes, rows
// of 8 and of 4 (not) bf16 vectors, and the K = 1 / K = 3 pair; the nest
// shows the staged tile only where the analysis holds; ptxas assembles the
// 128 x 256 kernel with vector stores and no spills; the tile's name is
// reserved.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

using namespace coalesce;
using coalesce::testing::occurrences;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One 64 x 64 warpgroup per block, TMA copies, tiles through shared memory.
MmaTiling staged_tiling(int persistent_blocks = 0) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind);
  t.tile_stores = TileStores::ThroughShared;
  t.persistent_blocks = persistent_blocks;
  return t;
}

} // namespace

TEST_CASE("tiles stored through shared memory match the double reference") {
  // (persistent blocks, producer warps)
  for (auto [blocks, producers] : std::vector<std::array<int, 2>>{{0, 0}, {2, 0}, {2, 4}}) {
    CAPTURE(blocks);
    CAPTURE(producers);
    MmaTiling t = staged_tiling(blocks);
    t.producer_warps = producers;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    // Full and ragged tiles; N = 132 and 70: rows that are not whole
    // 16-byte multiples (the element copy); K = 131: the cp.async copies.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{
             {200, 136, 72}, {128, 128, 64}, {130, 132, 192}, {64, 70, 131}, {1, 8, 8}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, Epilogue::BiasGelu, 23) < 4e-3);
    }
  }
}

TEST_CASE("through shared memory the epilogue still runs once per tile, after its reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(staged_tiling(), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      CHECK(coalesce::testing::bf16_error_against_reference(pipeline, 136, 128, K, e, 29) < 4e-3);
    }
  }
}

TEST_CASE("every block with aligned rows goes through the shared tile, storing only its vectors inside") {
  Gemm g = coalesce::testing::bf16_scheduled(staged_tiling());
  std::string nest = Pipeline(g.out).loop_nest();
  // 64 x 64 bf16 rows padded by 16 bytes; each warp of the copy a row of
  // 8 vectors of 8, 4 rows a warpgroup per step, 4 steps.
  CHECK(occurrences(nest, "allocate out_tile[64][72] bf16 in shared") == 1);
  // The full-tile copy's statements, staged, for every block: the
  // epilogue's expression once, into the tile; the copy stores the vectors
  // inside the output where rows are aligned, and the elements inside it,
  // in a loop, where they are not. partition_full_tiles's guarded copy is
  // gone: no direct store of the output remains.
  CHECK(occurrences(nest, "erfc(") == 1);
  CHECK(occurrences(nest, "out_tile[i - bi*64, j - bj*64] = ") == 1);
  CHECK(occurrences(nest, "out[i, j] = ") == 0);
  CHECK(occurrences(nest, "    let aligned = N % 8 == 0\n") == 1);
  CHECK(occurrences(nest, "    barrier\n    if aligned:\n      for warp in gpu_thread.y(0, 4):") == 1);
  CHECK(occurrences(nest, "if bi*64 + 63 < M && bj*64 + 63 < N") == 0);
  CHECK(occurrences(nest, "if bi*64 + flat/8 < M && bj*64 + flat % 8*8 < N:\n") == 1);
  CHECK(occurrences(nest, "= load_vector(out_tile[") == 1);
  CHECK(occurrences(nest, "for e in unrolled(0, 4):") >= 1);
  CHECK(occurrences(nest, "for e in serial(0, 32):\n            let flat = e*128 + warp*32 + lane\n            if bi*64 + "
                    "flat/64 < M && bj*64 + flat % 64 < N:\n              out[bi*64 + flat/64, bj*64 + flat % 64] = "
                    "out_tile[flat/64, flat % 64]\n") == 1);

  // A persistent block whose tile loop runs a pipeline across its tiles
  // has two epilogues (the loop unswitched on the TMA condition): one
  // tile serves both.
  MmaTiling across = staged_tiling(3);
  across.producer_warps = 4;
  std::string persistent = Pipeline(coalesce::testing::bf16_scheduled(across).out).loop_nest();
  CHECK(occurrences(persistent, "allocate out_tile[64][72] bf16 in shared") == 1);
  CHECK(occurrences(persistent, "= load_vector(out_tile[") == 2);
  CHECK(occurrences(persistent, "out[i, j] = ") == 0);

  // Without the directive nothing changes.
  Gemm direct = coalesce::testing::bf16_scheduled(coalesce::testing::one_tile_tma_tiling(kKind));
  CHECK(Pipeline(direct.out).loop_nest().find("out_tile") == std::string::npos);
  // Without a full-tile copy (partition_full_tiles off) every store is
  // guarded, and nothing is staged.
  Gemm guarded = coalesce::testing::bf16_scheduled(staged_tiling());
  guarded.out.partition_full_tiles(false);
  CHECK(Pipeline(guarded.out).loop_nest().find("out_tile") == std::string::npos);
}

TEST_CASE("the 128 x 256 kernel stores its tiles in 16-byte vectors, cleanly") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
  t.tile_stores = TileStores::ThroughShared;
  t.stages = 3;
  REQUIRE(t.block_n == 256);
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  std::string ptx = pipeline.ptx();
  // 128 x 256 bf16 = 4,096 vectors over 256 threads.
  CHECK(occurrences(ptx, "st.global.v4.b32") == 16);
  CHECK(occurrences(ptx, "ld.shared.v4.b32") == 16);
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("with producer warps that leave the kernel, the staged epilogue's barriers are the MMA warps' alone") {
  // A producer warpgroup keeping 40 registers leaves the kernel after its
  // copies (thread_exit): a barrier of the whole block after that would
  // wait for it forever, and lowering refuses one as an internal error.
  // The tile's writes, barriers and copies stay one part of the MMA warps,
  // on one tile per block, a persistent grid and clusters.
  for (auto [persistent, cluster] : std::vector<std::array<int, 2>>{{0, 0}, {7, 0}, {0, 2}}) {
    CAPTURE(persistent);
    CAPTURE(cluster);
    MmaTiling t = coalesce::testing::wide_producer_tiling(kKind, 40);
    t.stages = 3; // beside the output's tile
    t.persistent_blocks = persistent;
    t.cluster_blocks = cluster;
    t.tile_stores = TileStores::ThroughShared;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    CHECK(pipeline.loop_nest().find("allocate out_tile[") != std::string::npos);
    std::string ptx = pipeline.ptx();
    CHECK(occurrences(ptx, "setmaxnreg.dec.sync.aligned.u32") >= 1);
    CHECK(occurrences(ptx, "st.global.v4.b32") >= 1);
    // The persistent grid's two epilogues (its tile loop unswitched) spill
    // at 232 registers, as they did before the epilogue was compiled once.
    if (ptxas_available() && persistent == 0)
      coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
}

TEST_CASE("a Func named like the output's tile is refused") {
  Param M("M"), N("N");
  Input A("A", BFloat(16), {M, N});
  Var i("i"), j("j");
  Func out_tile("out_tile"), out("out");
  out_tile(i, j) = A(i, j);
  out(i, j) = out_tile(i, j);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); }),
            "the shared-memory tile of the output 'out' (gpu_tile_stores)");
}
