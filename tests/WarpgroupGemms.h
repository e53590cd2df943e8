#pragma once
// The GEMMs the warpgroup-MMA tests schedule: one warpgroup on a 64 x 64
// tile (ragged shapes then cover several blocks quickly on the CPU), a GEMM
// scheduled by the MMA recipe, and one whose output is laid out for MMAs
// with the reduction left to the test (to stage it as the test wants).

#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Gemm.h"

namespace coalesce::testing {

/// default_mma_tiling(kind) on one 64 x 64 tile of one warpgroup (or warp),
/// three stages (the nests the tests spell out count slots mod 3).
inline MmaTiling one_tile_tiling(MmaKind kind) {
  MmaTiling t = default_mma_tiling(kind, 64, 64, GpuTarget().sm_count());
  t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
  t.stages = 3;
  return t;
}

/// one_tile_tiling(kind) with its tiles copied by the TMA through a
/// pipeline of `stages` slots.
inline MmaTiling one_tile_tma_tiling(MmaKind kind, int stages = 3) {
  MmaTiling t = one_tile_tiling(kind);
  t.stages = stages;
  t.tma = true;
  return t;
}

/// Two warpgroups of 64 x 128 on a 128 x 128 tile, three stages, two
/// blocks per SM, TMA copies (for 16-bit kinds): default_mma_tiling's
/// choice where 128 x 256 tiles would leave multiprocessors idle, and the
/// structure the nest tests spell out.
inline MmaTiling two_warpgroup_tiling(MmaKind kind) {
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, GpuTarget().sm_count());
  t.block_m = t.block_n = 128;
  t.warp_m = 64;
  t.warp_n = 128;
  t.stages = 3;
  t.min_blocks_per_sm = 2;
  return t;
}

/// 128 x 256 tiles of two 64 x 256 MMA warpgroups, four stages, one block
/// per SM (384 threads, 168 registers each at launch), fed through the TMA
/// by a producer warpgroup that keeps `registers` (register reallocation).
inline MmaTiling wide_producer_tiling(MmaKind kind, int registers = 40) {
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, GpuTarget().sm_count());
  t.tma = true;
  t.block_n = t.warp_n = 256;
  t.min_blocks_per_sm = 1;
  t.stages = 4;
  t.producer_warps = 4;
  t.producer_registers = registers;
  // Four stages leave no room for the output tile in shared memory.
  t.tile_stores = TileStores::Direct;
  return t;
}

/// A GEMM + epilogue `e` with inputs of type `in` and output `out`,
/// scheduled with schedule_gemm_mma.
inline examples::Gemm mma_scheduled(const MmaTiling &t, examples::Epilogue e, Type in, Type out) {
  examples::Gemm g = examples::make_gemm(e, in, out);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

/// mma_scheduled with bf16 inputs and output.
inline examples::Gemm bf16_scheduled(const MmaTiling &t, examples::Epilogue e = examples::Epilogue::BiasGelu) {
  return mma_scheduled(t, e, BFloat(16), BFloat(16));
}

/// A GEMM without epilogue whose output is tiled 64 x 64 per block and laid
/// out for `kind` (`warp` x `warp` per warp or warpgroup), acc fused at the
/// block; the reduction's schedule is left to the caller.
inline examples::Gemm mma_tiled(MmaKind kind, Type in, Type out, int warp = 64) {
  examples::Gemm g = examples::make_gemm(examples::Epilogue::None, in, out);
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), lanes("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
      .mma_tile(ii, jj, kind, warp, warp, lanes, lane, mi, nj, fi, fj);
  g.out.fuse_epilogue(g.acc, bj);
  return g;
}

} // namespace coalesce::testing
