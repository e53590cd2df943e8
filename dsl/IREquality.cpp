#include "dsl/IREquality.h"

namespace coalesce {

namespace {
bool equal_all(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i]))
      return false;
  return true;
}

template <typename Node> bool equal_binary(const Expr &a, const Expr &b) {
  const auto *x = a.as<Node>();
  const auto *y = b.as<Node>();
  return equal(x->a, y->a) && equal(x->b, y->b);
}
} // namespace

bool equal(const Expr &a, const Expr &b) {
  if (a.same_as(b))
    return true;
  if (!a.defined() || !b.defined() || a.get()->kind != b.get()->kind || a.type() != b.type())
    return false;
  switch (a.get()->kind) {
  case IRNodeKind::IntImm: return a.as<IntImm>()->value == b.as<IntImm>()->value;
  case IRNodeKind::FloatImm: return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
  case IRNodeKind::Variable: return a.as<Variable>()->name == b.as<Variable>()->name;
  case IRNodeKind::Cast: return equal(a.as<Cast>()->value, b.as<Cast>()->value);
#define COALESCE_BINARY_CASE(name)                                                                 \
  case IRNodeKind::name: return equal_binary<name>(a, b);
    COALESCE_BINARY_CASE(Add) COALESCE_BINARY_CASE(Sub) COALESCE_BINARY_CASE(Mul)
    COALESCE_BINARY_CASE(Div) COALESCE_BINARY_CASE(Mod) COALESCE_BINARY_CASE(Min)
    COALESCE_BINARY_CASE(Max) COALESCE_BINARY_CASE(EQ) COALESCE_BINARY_CASE(NE)
    COALESCE_BINARY_CASE(LT) COALESCE_BINARY_CASE(LE) COALESCE_BINARY_CASE(GT)
    COALESCE_BINARY_CASE(GE) COALESCE_BINARY_CASE(And) COALESCE_BINARY_CASE(Or)
#undef COALESCE_BINARY_CASE
  case IRNodeKind::Not: return equal(a.as<Not>()->a, b.as<Not>()->a);
  case IRNodeKind::Select: {
    const auto *x = a.as<Select>();
    const auto *y = b.as<Select>();
    return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
           equal(x->false_value, y->false_value);
  }
  case IRNodeKind::Load:
    return a.as<Load>()->buffer == b.as<Load>()->buffer && equal_all(a.as<Load>()->indices, b.as<Load>()->indices);
  case IRNodeKind::Call:
    return a.as<Call>()->name == b.as<Call>()->name && a.as<Call>()->call_type == b.as<Call>()->call_type &&
           a.as<Call>()->intrinsic == b.as<Call>()->intrinsic &&
           equal_all(a.as<Call>()->args, b.as<Call>()->args);
  case IRNodeKind::Let:
    return a.as<Let>()->name == b.as<Let>()->name && equal(a.as<Let>()->value, b.as<Let>()->value) &&
           equal(a.as<Let>()->body, b.as<Let>()->body);
#define COALESCE_STMT_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_STMT(COALESCE_STMT_CASE)
#undef COALESCE_STMT_CASE
    return false;
  }
  return false;
}

} // namespace coalesce
