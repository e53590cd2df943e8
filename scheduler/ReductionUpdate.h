#pragma once
// An update's shape as a reduction: the running value at its own
// coordinates combined with one term by one operator. check_algorithm
// requires it of every update; later analyses read the term.

#include "dsl/FuncContents.h"

namespace coalesce {

/// Whether `e` is `func`'s own value at its own coordinates (f(x, y) in
/// f(x, y) += ...).
bool is_self_call(const Expr &e, const internal::FuncContents &func);

/// Splits an update's value into (operator, term) if it is self OP term or,
/// for an operator that commutes, term OP self; self - term gives "+" and
/// the term as written (subtracted). Operators: "+", "*", "min", "max".
bool split_reduction(const Expr &value, const internal::FuncContents &func, const char **op_name, Expr *term);

} // namespace coalesce
