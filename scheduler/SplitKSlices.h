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

/// How the workspace lays out the slices' partial sums.
enum class PartialsLayout {
  /// As the output: [slices][domain] (CombineKernel, whose kernel reads
  /// them element by element) or one [domain] all slices add into (Atomic).
  ByElement,
  /// By tile, then slice, then the accumulator's registers with the
  /// threads' dimensions fastest (Deterministic): [tiles...][slices][r],
  /// r = the producer's allocation as one index. A warp's store of one
  /// register is one contiguous run (whole 32-byte sectors, a 128-byte
  /// line per warp for f32), the last block reads them back the same way,
  /// every element of a tile has a place (no guard at the output's edge)
  /// and, under split_k_tail, only the tail's tiles have one.
  ByRegister,
};
PartialsLayout partials_layout(SplitKMode mode);

/// The workspace arguments of a pipeline whose output splits a reduction
/// (none otherwise): the partial sums, f32, laid out as partials_layout
/// says, and where split_counts_arrivals the per-tile arrival counters,
/// i32, one per block of the loops outside the slice loop.
/// `block_loops` and `block_extents` are those loops (qualified names) and
/// their extents, outermost first; `tile_elements` the elements of the
/// producer's allocation at the fuse site (a tile's registers).
std::vector<Argument> split_k_workspace(const Environment &env, const std::vector<std::string> &block_loops,
                                        const std::vector<Expr> &block_extents, const Expr &tile_elements);

/// The iterations of block loop `loop` (qualified) of extent `extent`
/// whose tiles are split: under split_k_tail, the tail loop's last
/// min(tail_iterations, extent); every one otherwise. Both the work units
/// (split_reduction_across_blocks) and the partial sums' tile dimension
/// (split_k_workspace) count them so.
Expr split_iterations(const FuncContents &consumer, const std::string &loop, const Expr &extent);

} // namespace coalesce
