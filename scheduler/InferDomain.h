#pragma once
// Finds the extent of each pure dimension of the output (and so of every
// Func, since Funcs call each other at their own coordinates): an explicit
// bound() if given, else the extent of an input indexed by that variable
// alone, as in out(i, j) reading A(i, k): i spans A's first extent.

#include "scheduler/Environment.h"

namespace coalesce {

void infer_domain(Environment &env);

} // namespace coalesce
