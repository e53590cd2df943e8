#pragma once
// Whether a reduction's partial last step may run in the one loop, without
// a guard, because every term it adds past the end is 0.
//
// A split of a reduction variable whose factor may not divide its extent
// leaves a last step that overhangs the reduction. BuildLoopNest peels that
// step (the full steps unguarded, then the last with a guard of each
// element), which doubles the loop's code. The guard is not needed where
// the overhang adds exactly 0: an update `self + x * y * ...` (or
// `self - ...`) whose every factor is (a cast of) an input staged in shared
// memory with zero_fill and read at the reduction variable itself, along a
// dimension where the input ends where the reduction does. Past the end,
// each factor reads the tile's 0, each product is 0 * 0 = 0, and self + 0
// is self: the same value, so one loop runs every step (as the tensor-core
// steps do).

#include "dsl/FuncContents.h"

#include <string>

namespace coalesce {

/// True when, in update stage `stage` (>= 1) of `func`, the reduction over
/// `rvar` (as the definition names it) in [min, min + extent) adds 0 for
/// every value past its end, by the rule above. `min` and `extent` are the
/// range this nest runs (a split_k slice's, where split), so a slice that
/// ends before the input does keeps its guard.
bool reduction_tail_adds_zero(const internal::FuncContents &func, size_t stage, const std::string &rvar,
                              const Expr &min, const Expr &extent);

} // namespace coalesce
