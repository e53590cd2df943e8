#pragma once
// Operators and math functions on Expr, as a user writes them in an
// algorithm, plus small queries on constants that passes share.

#include "dsl/IR.h"

#include <optional>
#include <vector>

namespace coalesce {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr condition, Expr true_value, Expr false_value);
/// Converts `value` to `type`. f32 -> bf16/f16 rounds to nearest even (the
/// only way a value becomes 16-bit); bf16/f16 -> f32 is exact. Conversions
/// between a 16-bit float and anything but f32 go through f32.
Expr cast(Type type, Expr value);
/// The arithmetic rule: a bf16/f16 value becomes Cast(f32, value) (exact);
/// any other value is returned as it is. Every operator applies it to its
/// operands, so arithmetic on 16-bit inputs runs in f32.
Expr widen_narrow_float(Expr value);
Expr exp(Expr x);
Expr erf(Expr x);
Expr erfc(Expr x); ///< 1 - erf(x), without the cancellation where erf(x) nears 1
Expr tanh(Expr x);
Expr sqrt(Expr x);
Expr abs(Expr x);

/// ceil(a / b) for non-negative integers, as the loop extents of a split use.
Expr ceil_div(Expr a, Expr b);
/// Clamps an i32 index into [lo, hi].
Expr clamp(Expr value, Expr lo, Expr hi);

Expr make_zero(Type type);
Expr make_one(Type type);
Expr make_const(Type type, double value);
std::optional<int64_t> as_const_int(const Expr &e);
bool is_const(const Expr &e, int64_t value);

/// True if `e` mentions the variable `name` anywhere.
bool expr_uses_var(const Expr &e, const std::string &name);

/// The variables `e` mentions, each once, in the order it first reads them.
std::vector<const Variable *> variables_of(const Expr &e);

/// 0 as an element of `type` is written by the copies: 0.0f for f32, the
/// cast of 0.0f for the 16-bit types.
Expr element_zero(Type type);

/// Conservatively: every value `e` can take is a multiple of `n` (constants,
/// products with such a factor, and sums, differences, selects, mins and
/// maxes of such).
bool provably_multiple_of(const Expr &e, int64_t n);

} // namespace coalesce
