#pragma once
// Where the slices of a reduction split across GPU blocks (split_k) lie:
// what build_loop_nest needs to give each slice its range of the split
// variable, and split_reduction_across_blocks to build the combine, shared
// here rather than through either pass's header.

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

/// The slices of this block's tile, under split_k_tail a value of the work
/// unit (1 for a whole tile): "out.s0.kz.slices". The split's constant
/// otherwise.
std::string slice_count_name(const FuncContents &consumer);
Expr slice_count(const FuncContents &consumer);

/// The workspace buffers' names: "acc.partials" (the slices' partial sums)
/// and "acc.tile_counters" (the arrivals per output tile).
std::string partials_name(const std::string &producer);
std::string counters_name(const std::string &producer);

/// The range [min, min + extent) of the split variable (domain [min, min +
/// extent)) that slice `slice` covers: ceil(ceil(extent / step) / slices)
/// steps each, in order, the last ones short or empty. `step` is the
/// factor of the variable's first split (its K step), so that each slice
/// starts on a step and only the slice that reaches the end is ragged.
struct SliceRange {
  Expr min, extent;
};
SliceRange slice_range(const Expr &min, const Expr &extent, int step, const Expr &slices, const Expr &slice);

/// Whether each slice's partial sums have a part of the workspace of their
/// own ([slices][domain]: Deterministic, CombineKernel) or all add into one
/// ([domain]: Atomic).
bool split_keeps_slices_apart(SplitKMode mode);
/// Whether the last block of each tile to arrive combines it, behind a
/// per-tile counter (Deterministic, Atomic), or a kernel of its own does
/// (CombineKernel).
bool split_counts_arrivals(SplitKMode mode);

/// The workspace arguments of a pipeline whose output splits a reduction
/// (none otherwise): the partial sums, f32, [slices][domain] or [domain]
/// (split_keeps_slices_apart), and where split_counts_arrivals the per-tile
/// arrival counters, i32, one per block of the loops outside the slice
/// loop. `block_extents` are those loops' extents, outermost first.
std::vector<Argument> split_k_workspace(const Environment &env, const std::vector<Expr> &block_extents);

} // namespace coalesce
