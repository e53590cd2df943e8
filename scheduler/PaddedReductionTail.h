#pragma once
// When a sum of products needs no tail guard. For acc += X(.., k, ..) *
// Y(.., k, ..) with X and Y both staged in shared memory at the loop that
// steps over k, the staged tiles can be padded past the end of k: X with
// -0.0 and Y with +0.0. Each padded step then adds (-0.0) * (+0.0) = -0.0,
// and x + (-0.0) == x for every float x (zeros of either sign, infinities
// and NaN included), so the sum is bit-for-bit what the guarded loop gives.
// The K loop then needs neither a guard per step nor a second copy for its
// last, partial step.

#include "scheduler/Environment.h"

#include <optional>

namespace coalesce {

struct PaddedTail {
  std::string reduction_var; ///< k, as the algorithm names it
  std::string at_loop;       ///< the staging loop, the outer loop of k's split
  Expr min, extent;          ///< k's domain
  std::string negative_input, positive_input; ///< padded with -0.0 and +0.0
  int negative_dim = 0, positive_dim = 0;     ///< the coordinate of each that is k
};

/// The padding that makes update `stage` of `func` exact without a tail
/// guard, if the update and its schedule have that shape.
std::optional<PaddedTail> padded_reduction_tail(const FuncContents &func, size_t stage);

} // namespace coalesce
