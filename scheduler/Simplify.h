#pragma once
// Folds constants, cancels integer terms (bi*64 + ti*4 - bi*64 -> ti*4),
// substitutes trivial lets, drops branches and loops that cannot run.
// Floating-point arithmetic is never changed: a schedule must not change
// the result.

#include "dsl/IR.h"

namespace coalesce {

Expr simplify(const Expr &e);
Stmt simplify(const Stmt &s);

} // namespace coalesce
