#pragma once
// Ready-made epilogue functions, written in the expression language so that
// every backend compiles them the same way.

#include "dsl/IR.h"

namespace coalesce {

/// max(x, 0), with NaN propagated: relu(NaN) is NaN, as in PyTorch (float max
/// and min keep NaN on every target).
Expr relu(const Expr &x);
/// The exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), as PyTorch's default.
Expr gelu(const Expr &x);
/// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Expr gelu_tanh(const Expr &x);

} // namespace coalesce
