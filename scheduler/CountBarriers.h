#pragma once
// A rewrite shared by the parts of lowering that hand a stretch of the
// kernel to some of the block's threads only (the MMA warps' cp.async
// fallback beside leaving producer warps; a role's program after the role
// split): its barriers must count only those threads.

#include "dsl/IR.h"

namespace coalesce {

/// `s`, a part only the block's first `threads` threads run, with its
/// barriers of the whole block counting those threads alone (a barrier
/// counting any other number is an internal error).
Stmt count_barriers(const Stmt &s, int threads);

} // namespace coalesce
