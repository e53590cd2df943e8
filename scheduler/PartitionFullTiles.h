#pragma once
// Lowering pass: a statement run by every thread of a block (a nest of
// thread loops) whose bounds guards hold for every thread at once, for most
// blocks, gets a copy without them, taken when the whole tile is inside:
//
//   for warp in gpu_thread.y(0, 8):         if bi*128 + 127 < M && bj*128 + 127 < N:
//     ...                                     for warp in gpu_thread.y(0, 8):
//       let i = bi*128 + ii                     ... out[i, j] = ...   (no guards)
//       if i < M:                      ->     else:
//         ... if j < N:                         for warp in gpu_thread.y(0, 8):
//               out[i, j] = ...                   ... (as before)
//
// Why: the epilogue's guards (a tile's rows and columns past M and N, for
// ragged shapes) put a branch around every element, so each element's
// chain (bias, erf, rounding, store) runs alone; without them the unrolled
// elements interleave. Only blocks on the ragged edge take the guarded copy.
//
// A guard is a comparison (<, <=, >, >=, or a conjunction of them) of
// expressions that split into a part uniform across the block's threads
// and a part bounded over the statement's own loops (constant bounds) and
// lets: a sum of those, multiples by constants, and divisions and
// remainders by positive constants (which truncate, as in C). The hoisted
// condition takes each part's worst case, so it implies every guard it
// replaces: the result cannot change, only which copy runs. Statements
// inside loops other than the block loops (a k step's guard), and those with
// loops of non-constant bounds, allocations, barriers, MMAs, tensor copies or
// other intrinsic statements are left alone: they are not per-element code
// run once per tile, and copying them would double a loop body or a
// pipeline.

#include "scheduler/Environment.h"

namespace coalesce {

/// Does nothing when the output's schedule turns it off
/// (Func::partition_full_tiles(false)).
Stmt partition_full_tiles(const Stmt &s, const Environment &env);
/// The same on any statement.
Stmt partition_full_tiles(const Stmt &s);

} // namespace coalesce
