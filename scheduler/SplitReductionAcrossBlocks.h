#pragma once
// A reduction split across GPU blocks (split_k), as loops. build_loop_nest
// asks here for the range of the split variable each slice covers, and for
// the statement at the fuse site:
//
//   for bj in gpu_block.x:                  for bj in gpu_block.x:
//     allocate acc                            for kz in gpu_block.z(0, S):
//     acc = init; acc += A*B (all of k)  ->     allocate acc
//     for ti ...: out = f(acc)                  acc = select(kz == 0, init, 0); acc += A*B (slice kz of k)
//                                               for ti ...: acc.partials[kz, i, j] = acc
//                                               let last = last_arrival(acc.tile_counters[bi, bj], S)
//                                               if last == 1:
//                                                 for ti ...: acc = partials[0, i, j]
//                                                 for s in 1..S:
//                                                   for ti ...: acc = acc + partials[s, i, j]
//                                                 for ti ...: out = f(acc)
//
// The blocks of one output tile run in any order on the GPU; the one that
// arrives last (behind a per-tile counter, which it resets) combines the
// slices in slice order and runs the epilogue, once per element. It reads
// the tile slice by slice, so that each thread has one slice's loads of all
// its elements in flight at once (element by element, the loads of a tile
// waited for the memory once per element: 16 x 4096 x 4096 split 4 ways,
// 32 elements per thread). Serially
// (the CPU), slice S - 1 is the last. In atomic mode the slices add into one
// zeroed tile with atomic_add, and the last block reads it and zeroes it.

#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

#include <string>
#include <vector>

namespace coalesce {

/// The split that applies to stage `s` of `func` (an update of the split
/// producer), or nullptr.
const SplitReduction *split_of(const Environment &env, const FuncContents &func, size_t s);

/// The qualified name of the slice loop: "out.s0.kz".
std::string slice_loop_name(const FuncContents &consumer);

/// The range [min, min + extent) of the split variable (domain [min, min +
/// extent)) that slice `slice` covers: ceil(ceil(extent / step) / slices)
/// steps each, in order, the last ones short or empty. `step` is the
/// factor of the variable's first split (its K step), so that each slice
/// starts on a step and only the slice that reaches the end is ragged.
struct SliceRange {
  Expr min, extent;
};
SliceRange slice_range(const Expr &min, const Expr &extent, int step, int slices, const Expr &slice);

/// The workspace arguments of a pipeline whose output splits a reduction
/// (none otherwise): the partial sums, f32, [slices][domain] (deterministic)
/// or [domain] (atomic), and the per-tile arrival counters, i32, one per
/// block of the loops outside the slice loop. `block_extents` are those
/// loops' extents, outermost first.
std::vector<Argument> split_k_workspace(const Environment &env, const std::vector<Expr> &block_extents);

/// The statement at the fuse site of a split producer: the slice loop
/// around the producer's allocation, its `produce` (init and slice of the
/// sum), the partial stores, the arrival and the combine with the
/// consumer's `consume` (the site's original body). `block_loops` are the
/// block loops outside the site (qualified names), outermost first.
Stmt split_reduction_site(const Environment &env, const FuncContents &producer, MemoryType memory,
                          const std::vector<Expr> &buffer_extents, const Stmt &produce, const Stmt &consume,
                          const std::vector<std::string> &block_loops);

} // namespace coalesce
