#pragma once
// The default schedule for a GEMM with a fused epilogue, written only with
// the schedule primitives a user has, and a shape-aware choice of its tile
// sizes. The AOT tool, the main job and the benchmark use it.

#include "dsl/Func.h"

#include <cstdint>
#include <string>

namespace coalesce {

/// The knobs of the GEMM schedule.
struct GemmTiling {
  int block_m = 128, block_n = 128; ///< output tile per GPU block
  int threads_m = 16, threads_n = 16; ///< threads per block in each direction
  int k_step = 8;                   ///< reduction elements staged per step
  /// Tiles of A and B in shared memory, each one K step: 1 (copy a step,
  /// then use it), 2 (double buffered: fetch the next step while computing),
  /// or 3 to 8 (a software pipeline with stages - 1 steps in flight, which
  /// needs async_copy).
  int stages = 2;
  bool async_copy = true;           ///< fetch with cp.async, not through registers
  /// How the threads_m x threads_n threads form warps: each warp covers
  /// warp_rows x warp_cols of them (gpu_thread_warps; warp_rows * warp_cols
  /// = 32). 0 x 0: linear order, tj fastest (gpu_threads).
  int warp_rows = 0, warp_cols = 0;
  int a_padding = 4;                ///< padding of A's transposed tile rows
  /// With async_copy: tiles zero-filled past the inputs' ends, so a ragged
  /// K's last step runs in the one k loop, unguarded (half the kernel's
  /// code; scheduler/ReductionTailAddsZero.h), and only the tiles at the
  /// ends test their elements. Refused on the GPU until
  /// coalesce-gpu-check has run it there (scheduler/UnverifiedFeatures).
  bool zero_fill = false;
  int block_group_rows = 0;         ///< gpu_block_groups (0: blocks row by row)
  /// Blocks the reduction is split across (split_k); 1: one block per tile.
  int split_k = 1;
  SplitKMode split_k_mode = SplitKMode::Deterministic;

  int register_m() const { return block_m / threads_m; }
  int register_n() const { return block_n / threads_n; }
  std::string str() const;
};

/// Picks tile sizes for an M x N x K problem on a GPU with `sm_count`
/// multiprocessors: the largest tile that still gives every multiprocessor
/// work, so small and ragged shapes are not left with idle SMs; for M up to
/// 64 (decode-like shapes), a tile of 16, 32 or 64 rows (small_m_tiling).
/// When the tiles still leave multiprocessors idle, the reduction is split
/// across blocks (default_split_k). Shapes that are unknown until run time
/// (pass 0) get the large tile and no split.
GemmTiling default_gemm_tiling(int64_t M, int64_t N, int64_t K, int sm_count);

/// A tile of `rows` (16, 32 or 64) x 128 for a small M: rows / 4 x 16
/// threads, each with 4 x 8 outputs (two groups of 4 columns, 64 apart).
GemmTiling small_m_tiling(int rows);

/// How many blocks to split a K-long reduction across when `tiles` output
/// tiles would run alone: none (1) when the tiles already give nine in ten
/// of the `sm_count` multiprocessors `blocks_per_sm` blocks, when K is shorter than
/// kMinSplitDepth (one tile's K loop is then not what takes the time) or
/// unknown (0); else enough slices for about `blocks_per_sm` blocks per
/// multiprocessor, each slice at least kMinSliceDepth deep, at most
/// kMaxDefaultSlices.
int default_split_k(int64_t tiles, int64_t K, int k_step, int sm_count, int blocks_per_sm = 2);
/// The blocks of `threads` threads a split aims to keep on one
/// multiprocessor: 512 threads (16 warps) of them, 2 to 8 blocks.
int split_k_blocks_per_sm(int threads);
constexpr int kMinSplitDepth = 4096;
constexpr int kMinSliceDepth = 512;
constexpr int kMaxDefaultSlices = 32;

/// Schedules `out` (the epilogue, out(i, j) = f(acc(i, j), ...)) and `acc`
/// (acc(i, j) = 0; acc(i, j) += A(i, k) * B(k, j)) for the GPU:
///   - out's tile of block_m x block_n per GPU block, threads_m x threads_n
///     threads, each with a register block split in two halves per
///     direction 64 apart (so a warp's shared reads are consecutive);
///   - acc computed on out's register tile (fuse_epilogue at the block loop);
///   - K split by k_step; A staged transposed and padded, B staged as is,
///     both in `stages` tiles (double buffered by default); the k_step loop
///     and the register block unrolled.
/// The store of out happens once, after the K loop.
void schedule_gemm(Func out, Func acc, const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k,
                   const GemmTiling &tiling);

} // namespace coalesce
