#pragma once
// Structural equality of expressions: same node kinds, types, names and
// values all the way down. Cheaper than comparing printed text, which the
// simplifier and load hoisting would otherwise do for every term.

#include "dsl/IR.h"

namespace coalesce {

bool equal(const Expr &a, const Expr &b);

} // namespace coalesce
