#pragma once
// Whether a warp MMA operand can be fetched with ldmatrix: ldmatrix reads
// 8 rows of 8 consecutive 16-bit elements from shared memory, each row
// starting at a 16-byte boundary, and hands every lane its fragment.

#include "dsl/IR.h"

namespace coalesce {

/// True when `operand` (an element of a WarpMma operand with its widening
/// removed) is a load whose `span` elements along `axis` (kMmaStep for A
/// and for a B stored N x K, kMmaColumn for a B stored K x N) are
/// consecutive, starting at an index that is a multiple of 8, whatever the
/// other coordinates are. `fixed` names the coordinate the operand does not
/// depend on (kMmaColumn for A, kMmaRow for B), which is set to 0. The
/// buffer's memory is the caller's to check.
bool has_ldmatrix_rows(const Expr &operand, const char *axis, const char *fixed, int span);

} // namespace coalesce
