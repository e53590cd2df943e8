#include "dsl/IROperator.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {

// Lets a user write `x + 1` or `0.5f * x` with an f32 `x`: an integer
// immediate next to a float becomes a float immediate. Any other mismatch is
// the user's to resolve with an explicit cast.
// A bf16/f16 operand is widened to f32 first (the arithmetic rule), so
// bf16 * bf16 is an f32 product and bf16 + f32 needs no cast.
void match_types(Expr &a, Expr &b, const char *op) {
  if (!a.defined() || !b.defined())
    user_error("operator ", op, " used with an undefined expression");
  a = widen_narrow_float(a);
  b = widen_narrow_float(b);
  if (a.type() == b.type())
    return;
  if (a.type().is_float() && b.as<IntImm>()) {
    b = FloatImm::make(a.type(), static_cast<double>(b.as<IntImm>()->value));
    return;
  }
  if (b.type().is_float() && a.as<IntImm>()) {
    a = FloatImm::make(b.type(), static_cast<double>(a.as<IntImm>()->value));
    return;
  }
  user_error("operator ", op, " combines ", a.type(), " with ", b.type(),
             ": convert one side with cast(", a.type(), ", ...) or cast(", b.type(), ", ...)");
}

} // namespace

Expr operator+(Expr a, Expr b) { match_types(a, b, "+"); return Add::make(a, b); }
Expr operator-(Expr a, Expr b) { match_types(a, b, "-"); return Sub::make(a, b); }
Expr operator*(Expr a, Expr b) { match_types(a, b, "*"); return Mul::make(a, b); }
Expr operator/(Expr a, Expr b) { match_types(a, b, "/"); return Div::make(a, b); }
Expr operator%(Expr a, Expr b) { match_types(a, b, "%"); return Mod::make(a, b); }
Expr operator-(Expr a) {
  if (!a.defined())
    user_error("unary - of an undefined expression");
  a = widen_narrow_float(a);
  return make_zero(a.type()) - a;
}
Expr operator<(Expr a, Expr b) { match_types(a, b, "<"); return LT::make(a, b); }
Expr operator<=(Expr a, Expr b) { match_types(a, b, "<="); return LE::make(a, b); }
Expr operator>(Expr a, Expr b) { match_types(a, b, ">"); return GT::make(a, b); }
Expr operator>=(Expr a, Expr b) { match_types(a, b, ">="); return GE::make(a, b); }
Expr operator==(Expr a, Expr b) { match_types(a, b, "=="); return EQ::make(a, b); }
Expr operator!=(Expr a, Expr b) { match_types(a, b, "!="); return NE::make(a, b); }
Expr operator&&(Expr a, Expr b) {
  if (!a.type().is_bool() || !b.type().is_bool())
    user_error("operator && needs two conditions, got ", a.type(), " and ", b.type());
  return And::make(a, b);
}
Expr operator||(Expr a, Expr b) {
  if (!a.type().is_bool() || !b.type().is_bool())
    user_error("operator || needs two conditions, got ", a.type(), " and ", b.type());
  return Or::make(a, b);
}
Expr operator!(Expr a) {
  if (!a.type().is_bool())
    user_error("operator ! needs a condition, got ", a.type());
  return Not::make(a);
}

Expr min(Expr a, Expr b) { match_types(a, b, "min"); return Min::make(a, b); }
Expr max(Expr a, Expr b) { match_types(a, b, "max"); return Max::make(a, b); }

Expr select(Expr condition, Expr true_value, Expr false_value) {
  if (!condition.defined() || !condition.type().is_bool())
    user_error("select's first argument must be a condition (a comparison), got ",
               condition.defined() ? condition.type().str() : "nothing");
  match_types(true_value, false_value, "select");
  return Select::make(condition, true_value, false_value);
}

Expr cast(Type type, Expr value) {
  if (!value.defined())
    user_error("cast of an undefined expression");
  if (type.is_float() && type != Float(32) && !type.is_narrow_float())
    user_error("cast to ", type, ": the float types are Float(32), Float(16) (IEEE half), BFloat(16), Float8E4M3() and "
               "Float8E5M2()");
  if (value.type() == type)
    return value;
  // Code generation converts 16- and 8-bit floats to and from f32 only: any
  // other pairing goes through f32, which holds every bf16, f16, FP8 and
  // (rounded once) i32 value, so no value is rounded twice.
  if ((type.is_narrow_float() || value.type().is_narrow_float()) && type != Float(32) &&
      value.type() != Float(32))
    return Cast::make(type, Cast::make(Float(32), value));
  return Cast::make(type, value);
}

Expr widen_narrow_float(Expr value) {
  if (value.defined() && value.type().is_narrow_float())
    return Cast::make(Float(32), std::move(value));
  return value;
}

namespace {
Expr float_intrinsic(Intrinsic intrinsic, Expr x) {
  const char *name = intrinsic_name(intrinsic);
  if (!x.defined())
    user_error(name, "() of an undefined expression");
  x = widen_narrow_float(x);
  if (x.as<IntImm>())
    x = FloatImm::make(Float(32), static_cast<double>(x.as<IntImm>()->value));
  if (!x.type().is_float())
    user_error(name, "() needs a floating-point argument, got ", x.type(),
               ": write ", name, "(cast(Float(32), x))");
  return Call::make_intrinsic(intrinsic, x.type(), {x});
}
} // namespace

Expr exp(Expr x) { return float_intrinsic(Intrinsic::Exp, std::move(x)); }
Expr erf(Expr x) { return float_intrinsic(Intrinsic::Erf, std::move(x)); }
Expr erfc(Expr x) { return float_intrinsic(Intrinsic::Erfc, std::move(x)); }
Expr tanh(Expr x) { return float_intrinsic(Intrinsic::Tanh, std::move(x)); }
Expr sqrt(Expr x) { return float_intrinsic(Intrinsic::Sqrt, std::move(x)); }
Expr abs(Expr x) { return float_intrinsic(Intrinsic::Abs, std::move(x)); }

Expr ceil_div(Expr a, Expr b) { return (a + b - 1) / b; }
Expr clamp(Expr value, Expr lo, Expr hi) { return max(min(std::move(value), std::move(hi)), std::move(lo)); }

Expr make_const(Type type, double value) {
  if (type.is_float())
    return FloatImm::make(type, value);
  return IntImm::make(type, static_cast<int64_t>(value));
}
Expr make_zero(Type type) { return make_const(type, 0); }
Expr make_one(Type type) { return make_const(type, 1); }

std::optional<int64_t> as_const_int(const Expr &e) {
  if (const auto *imm = e.as<IntImm>())
    return imm->value;
  return std::nullopt;
}

bool is_const(const Expr &e, int64_t value) {
  auto constant = as_const_int(e);
  return constant && *constant == value;
}

namespace {
class UsesVar : public IRVisitor {
public:
  explicit UsesVar(const std::string &name) : name_(name) {}
  bool found = false;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override { found |= op->name == name_; }
  const std::string name_; // a copy: a caller may pass a temporary, and a reference would dangle
};
} // namespace

bool expr_uses_var(const Expr &e, const std::string &name) {
  UsesVar finder(name);
  finder.visit_expr(e);
  return finder.found;
}

std::vector<const Variable *> variables_of(const Expr &e) {
  class Collect : public IRVisitor {
  public:
    std::vector<const Variable *> found;
    using IRVisitor::visit;
    void visit(const Variable *op) override {
      for (const Variable *seen : found)
        if (seen->name == op->name)
          return;
      found.push_back(op);
    }
  } collect;
  collect.visit_expr(e);
  return collect.found;
}

Expr element_zero(Type type) { return type == Float(32) ? Expr(0.0f) : Cast::make(type, Expr(0.0f)); }

bool provably_multiple_of(const Expr &e, int64_t n) {
  if (auto value = as_const_int(e))
    return *value % n == 0;
  if (const auto *add = e.as<Add>())
    return provably_multiple_of(add->a, n) && provably_multiple_of(add->b, n);
  if (const auto *sub = e.as<Sub>())
    return provably_multiple_of(sub->a, n) && provably_multiple_of(sub->b, n);
  if (const auto *mul = e.as<Mul>())
    return provably_multiple_of(mul->a, n) || provably_multiple_of(mul->b, n);
  if (const auto *select = e.as<Select>())
    return provably_multiple_of(select->true_value, n) && provably_multiple_of(select->false_value, n);
  if (const auto *min = e.as<Min>())
    return provably_multiple_of(min->a, n) && provably_multiple_of(min->b, n);
  if (const auto *max = e.as<Max>())
    return provably_multiple_of(max->a, n) && provably_multiple_of(max->b, n);
  return false;
}

} // namespace coalesce
