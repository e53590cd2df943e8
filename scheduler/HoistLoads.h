#pragma once
// Lowering pass (after unrolling): in each straight run of stores, loads of
// buffers the run does not write (the staged tiles, inputs) are read once
// each, into a let placed `lookahead` stores ahead of the first use:
//
//   acc[0] = acc[0] + A_s[i]*B_s[j]         let a0 = A_s[i]; let b0 = B_s[j]; ...
//   acc[1] = acc[1] + A_s[i]*B_s[j + 1]  -> (the next step's a, b read here)
//   ...                                      acc[0] = acc[0] + a0*b0; ...
//
// Reading each element of a register fragment once, well before its use,
// hides the shared-memory latency behind the previous step's arithmetic and
// gives LLVM an eighth of the loads to prove redundant. Values are
// unchanged: nothing in the run writes those buffers.

#include "dsl/IR.h"

namespace coalesce {

Stmt hoist_loads(const Stmt &s, int lookahead);

} // namespace coalesce
