#pragma once
// Lowering pass: replaces each unrolled loop (constant extent) by copies of
// its body, one per iteration with the loop variable a constant, so that
// register arrays are indexed only by constants.

#include "dsl/IR.h"

namespace coalesce {

Stmt unroll_loops(const Stmt &s);

} // namespace coalesce
