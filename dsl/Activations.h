#pragma once
// Ready-made epilogue functions, written in the expression language so that
// every backend compiles them the same way.

#include "dsl/IR.h"

#include <string>

namespace coalesce {

/// max(x, 0), with NaN propagated: relu(NaN) is NaN, as in PyTorch (float max
/// and min keep NaN on every target).
Expr relu(const Expr &x);
/// The exact GELU, x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), as PyTorch's
/// default, computed as 0.5 x erfc(-x / sqrt(2)): the same function, without
/// 1 + erf's cancellation for negative x (its tail keeps its precision).
Expr gelu(const Expr &x);
/// The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Expr gelu_tanh(const Expr &x);
/// The logistic function, 1 / (1 + exp(-x)): 0 for x = -inf, 1 for +inf.
Expr sigmoid(const Expr &x);
/// SiLU (swish), x * sigmoid(x), computed as x / (1 + exp(-x)) in f32 as
/// PyTorch computes it: -0 below about -88.7, where exp(-x) overflows (the
/// exact value there is under 1e-36 in magnitude).
Expr silu(const Expr &x);
/// x itself, widened to f32 if it is bf16/f16 (an epilogue with no activation).
Expr identity(const Expr &x);
/// The activations above by name (relu, gelu, gelu_tanh, sigmoid, silu,
/// identity) applied to `x`; a user error naming the choices for any other.
Expr activation(const std::string &name, const Expr &x);

} // namespace coalesce
