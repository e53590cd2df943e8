// A warpgroup holding 128 rows (mma_tile with warp_m = 128 on a warpgroup
// kind): two 64-row instructions per k16 on two accumulators, each warp 16
// rows of each; 256 x 128 tiles of two such warpgroups (cuBLAS's tile at
// 4096^3), and 128 x 128 of one (ping-pong's consumer). Numerics on the
// CPU at ragged shapes and the K = 0 / 1 / 3 cases, for each way the tile
// is stored; ptxas clean (no injected waits: the accumulators' first values
// are opaque).

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

MmaTiling rows_128(int block_m, TileStores stores, int stages = 4) {
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, 4096, GpuTarget().sm_count());
  t.block_m = block_m;
  t.block_n = 128;
  t.warp_m = 128;
  t.warp_n = 128;
  t.stages = stages;
  t.min_blocks_per_sm = 1;
  t.split_k = 1;
  t.tile_stores = stores;
  return t;
}

} // namespace

TEST_CASE("128-row warpgroups match the double reference, ragged, K = 0, 1, 3, for each way of storing the tile") {
  for (int block_m : {256, 128})
    for (TileStores stores : {TileStores::Direct, TileStores::ThroughShared, TileStores::SumsThroughShared}) {
      CAPTURE(block_m);
      CAPTURE(static_cast<int>(stores));
      Gemm g = coalesce::testing::bf16_scheduled(rows_128(block_m, stores, block_m == 256 ? 3 : 4));
      Pipeline pipeline(g.out);
      for (auto [M, N, K] :
           std::vector<std::array<int, 3>>{{300, 200, 136}, {131, 133, 67}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        CHECK(coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, Epilogue::BiasGelu, 7) < 4e-3);
      }
    }
}

TEST_CASE("128-row warpgroups: two m64n128 instructions per k16, ptxas clean") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  GpuTarget target = parse_gpu_target("sm_90a");
  for (TileStores stores : {TileStores::ThroughShared, TileStores::SumsThroughShared}) {
    CAPTURE(static_cast<int>(stores));
    Gemm g = coalesce::testing::bf16_scheduled(rows_128(256, stores, 3));
    Pipeline pipeline(g.out);
    const std::string &ptx = pipeline.ptx(target);
    CHECK(ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != std::string::npos);
    PtxasResult assembled = pipeline.assemble(target);
    coalesce::testing::check_assembled_cleanly(assembled);
    MESSAGE(static_cast<int>(stores), ": ", assembled.kernels.front().registers, " registers");
  }
}

TEST_CASE("a warpgroup of 128 rows takes at most 128 columns (the accumulators' registers), named") {
  MmaTiling t = rows_128(256, TileStores::Direct);
  t.block_n = t.warp_n = 256;
  std::string message = coalesce::testing::user_error_of([&] { coalesce::testing::bf16_scheduled(t); });
  CHECK(message.find("mma_tile with a 128 x 256 tile") != std::string::npos);
}
