#pragma once
// Applies fold_bias_into_init: for out(i, j) = f(acc(i, j) + b(j)) with acc
// a sum starting from 0, acc starts from b instead and out reads acc alone.
// b is still added exactly once; only its place in the rounding order moves
// (first instead of last), which is why this is an explicit request.

#include "scheduler/Environment.h"

namespace coalesce {

void fold_bias_into_init(Environment &env);

} // namespace coalesce
