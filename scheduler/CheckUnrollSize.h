#pragma once
// Unrolling is bounded, so that compile time is.

#include "dsl/IR.h"

namespace coalesce {

/// No statement is unrolled into more than kMaxUnrolledCopies copies (the
/// product of the extents of the unrolled loops around it, dsl/Limits.h).
/// Throws a UserError naming the loops and their extents.
void check_unroll_size(const Stmt &s);

} // namespace coalesce
