#pragma once
// Part of lower_tma_pipelines: the software pipeline of a k-step loop
// whose tiles warpgroup MMAs read, fed by the tensor memory accelerator
// (TmaCopies) instead of every thread's cp.async copies:
//
//   allocate A_full[S] u64 in shared           (one mbarrier per slot)
//   if <every staged input's rows are whole 16-byte multiples>:
//     one thread: mbarrier_init(A_full[s], 1) for each slot; init fence
//     barrier
//     one thread, for the first S - 1 tiles t: expect_tx(A_full[t], bytes);
//                                              tensor_copy ... -> slot t
//     for ko:
//       every thread: mbarrier_wait(A_full[ko % S], (ko / S) % 2)
//       <the k step: warpgroup MMAs on slot ko % S, then wgmma_wait(1)>
//       barrier                                (every MMA of step ko - 1 done)
//       one thread: expect_tx + tensor_copy of tile ko + S - 1 into slot
//                   (ko - 1) % S, the slot step ko - 1 read
//     barrier; one thread: mbarrier_inval each slot
//   else:
//     <the cp.async pipeline>
//
// With multicast tiles (TmaCopies::multicast, on an output in clusters
// of C blocks: gpu_cluster), block r of a cluster copies rows [r R / C,
// (r + 1) R / C) of each box of such a tile into the shared memory of all
// C blocks, completing on each block's own barrier, which expects the whole
// box. So a block may refill a slot only when every block of its cluster
// is done reading it: the barriers after the inits, after each step and
// after the loop are barriers of the whole cluster (cluster_barrier). With
// producer warps (below) the empty barriers do it instead: each counts the
// MMA warps of every block of the cluster, each MMA warp releases a slot
// in all of them (mbarrier_arrive(bar, C)), and a block invalidates its
// barriers only after every slot's last release.
//
// With producer warps (TmaCopies::producer), warps of their own,
// past the MMA warps in the block, issue the copies, and each slot has an
// empty mbarrier besides its full one:
//
//   allocate A_full[S], A_empty[S] u64 in shared
//   if <describable>:
//     one thread: init A_full[s] (1 arrival), A_empty[s] (one per MMA warp)
//     barrier
//     producer thread: tiles 0 .. S - 1 into slots 0 .. S - 1
//     for ko:
//       MMA threads: mbarrier_wait(A_full[ko % S], (ko / S) % 2)
//       <the k step, then wgmma_wait(1)>
//       each MMA warp's first thread: mbarrier_arrive(A_empty[(ko - 1) % S])
//                                   (the MMAs of step ko - 1 are complete)
//       producer thread: mbarrier_wait(A_empty[ko % S], (ko / S) % 2);
//                        tile ko + S into slot ko % S
//     barrier; one thread: mbarrier_inval each barrier
//
// No block-wide barrier is left in the loop, so on the GPU every warp runs
// the loop at its own pace: the producer as far ahead as the slots allow,
// the MMA warps as their tiles land. Run one step after another (the
// host), each step's copies come after its reads, which is what the
// barriers order on the GPU.
//
// Slots and parities come from the loop's variable, never from the user:
// tile t lives in slot t % S and completes phase t / S of its barrier, so
// the wait's parity is (t / S) % 2. A copy reads nothing outside the input
// (the TMA fills it with 0), which handles ragged M, N and K. The TMA needs
// each row of the input to start 16 bytes after the previous one's start
// (a multiple of 16 bytes per row): the branch picks the cp.async copies
// where it is not, and says so in the nest. An input copied first where its
// rows are ragged (PaddedCopy::WhereRowsAreRagged) has no cp.async copies:
// each of its boxes is copied by one of two TMA copies, from the input
// where its rows are whole 16-byte multiples, else from the copy:
//
//   if <A's rows are whole 16-byte multiples>: tensor_copy A[...] -> slot
//   else:                                      tensor_copy A_padded[...] -> slot

#include "dsl/IR.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace coalesce {

/// One staged input of a TMA pipeline.
struct TmaTile {
  const InputContents *input = nullptr;
  /// What the TMA reads: the input, or with TmaCopies::padded_copy
  /// its copy (scheduler/PadTmaInputs.h), which it can always describe and
  /// which may be transposed. Coordinates below are in the source's order:
  /// the order of its dimensions, the innermost last.
  std::string source;
  bool padded = false;
  /// Where the copy is made only on launches whose input rows are ragged
  /// (PaddedCopy::WhereRowsAreRagged): the input's element, which the TMA
  /// reads instead where tma_describable holds, at the copy's coordinates
  /// (the same, as the copy is not transposed). Empty: none.
  std::function<Expr(const std::vector<Expr> &, const std::map<std::string, Expr> &)> input_value;
  std::string buffer;               ///< its shared tile, [S][C / W][R][W], W elements per 128 bytes
  std::vector<Expr> origin;         ///< the tile's first element (source order), at the loop's value
  std::vector<int64_t> extent;      ///< the tile's extents (source order): R, C
  /// The shared indices of tile coordinates (source order) in slot `slot`.
  std::function<std::vector<Expr>(const std::vector<Expr> &, const Expr &)> shared_indices;
  /// The tile's element at coordinates (source order), 0 outside the
  /// source, with the loop's variable replaced as `shift` says.
  std::function<Expr(const std::vector<Expr> &, const std::map<std::string, Expr> &)> value;
  /// 1, or the blocks of the cluster that share the tile
  /// (TmaCopies::multicast): each copies its part of every box to all of
  /// them.
  int multicast = 1;
};

/// A thread loop of the block, as the staging loop's body has it.
struct BlockThreadLoop {
  std::string name;
  Expr min, extent;
  int gpu_dim = 0;
};

struct TmaPipeline {
  const For *loop = nullptr;  ///< the k-step loop being staged
  std::string stage;          ///< "'acc' (update 0)": whose loop, for messages
  Stmt body;                  ///< its body, reading the tiles' slot loop % S
  std::vector<TmaTile> tiles;
  int stages = 3;
  int mma_groups_in_flight = 1; ///< after each step's wait (mma_groups_in_flight())
  std::vector<BlockThreadLoop> threads;
  std::string barriers;         ///< the name of the (full) mbarrier array
  int producer_warps = 0;       ///< ProducerWarps::warps; 0: the MMA warps issue
  /// What the schedule asks the producer warps to keep with register
  /// reallocation (ProducerWarps::registers; 0: none). The pipeline only
  /// carries it, in the producer boundaries it leaves
  /// (ProducerBoundary): reallocate_registers reallocates.
  int producer_registers = 0;
  std::string empty_barriers;   ///< with producer warps: the name of the empty mbarriers
  Stmt fallback;                ///< the cp.async pipeline, where the TMA cannot run
  /// With producer warps on a persistent grid (gpu_persistent_blocks): the
  /// k steps of the block's tiles before this one. Slots and phases then
  /// count from there, over (tile, k step), so one pipeline runs across
  /// the block's tiles without draining (tma_pipeline_across_tiles).
  /// Undefined: a pipeline of its own per run of the loop, counting from 0.
  Expr steps_before;
  /// With steps_before: the k steps of all the block's tiles, after which
  /// the pipeline's last releases have landed (in clusters, the peers'
  /// on this block's barriers) and the block may leave.
  Expr run_steps;
};

/// A TMA pipeline that runs across the tiles of a persistent block, in the
/// parts the tile loop goes between:
///
///   if describable:                      else:
///     setup        (once per block)        fallback_setup
///     for tile:                             for tile:
///       ... per_tile ...                      ... fallback_per_tile ...
///     teardown     (once per block)
///
/// The setup initializes the barriers and marks the producers' start; per
/// tile, the producer fills the tile's first slots once the steps S before
/// have released them (the previous tile's last steps, so it runs ahead
/// into the next tile while the MMA warps finish this one), and the MMA
/// warps release every slot they read, the last one after the loop. The
/// teardown marks the producers' end and invalidates the barriers; the
/// fallback's setup marks that the producers have nothing to do in it
/// (ProducerBoundary, for reallocate_registers). `describable` is
/// undefined where the TMA can always run (no fallback).
struct TmaPipelineAcrossTiles {
  Expr describable;
  Stmt setup, per_tile, teardown;
  Stmt fallback_setup, fallback_per_tile;
  /// The mbarrier arrays to allocate around it all, S u64 each.
  std::vector<std::string> barrier_arrays;
};

/// The pipeline above; the caller allocates the tiles around it.
Stmt tma_pipeline(const TmaPipeline &p);

/// The pipeline with producer warps, in its parts around a persistent
/// block's tile loop (p.steps_before defined); the caller allocates the
/// tiles and the barrier arrays around the tile loop.
TmaPipelineAcrossTiles tma_pipeline_across_tiles(const TmaPipeline &p);

} // namespace coalesce
