#include "scheduler/ConcreteValue.h"

#include "dsl/IROperator.h"

#include <algorithm>

namespace coalesce {

std::optional<int64_t> concrete_value(const Expr &e, const std::map<std::string, int64_t> &at) {
  if (const auto *imm = e.as<IntImm>())
    return imm->value;
  if (const auto *var = e.as<Variable>()) {
    auto found = at.find(var->name);
    return found == at.end() ? std::nullopt : std::optional<int64_t>(found->second);
  }
  if (const auto *select = e.as<Select>()) {
    auto condition = concrete_value(select->condition, at);
    return condition ? concrete_value(*condition ? select->true_value : select->false_value, at) : std::nullopt;
  }
  if (const auto *cast = e.as<Cast>())
    return concrete_value(cast->value, at);
  if (const auto *no = e.as<Not>()) {
    auto a = concrete_value(no->a, at);
    return a ? std::optional<int64_t>(*a == 0) : std::nullopt;
  }
  auto binary = [&](const auto *op, auto f) -> std::optional<int64_t> {
    auto a = concrete_value(op->a, at), b = concrete_value(op->b, at);
    return a && b ? f(*a, *b) : std::nullopt;
  };
  using V = std::optional<int64_t>;
  if (const auto *op = e.as<Add>())
    return binary(op, [](int64_t a, int64_t b) { return V(a + b); });
  if (const auto *op = e.as<Sub>())
    return binary(op, [](int64_t a, int64_t b) { return V(a - b); });
  if (const auto *op = e.as<Mul>())
    return binary(op, [](int64_t a, int64_t b) { return V(a * b); });
  if (const auto *op = e.as<Div>())
    return binary(op, [](int64_t a, int64_t b) { return b > 0 && a >= 0 ? V(a / b) : V(); });
  if (const auto *op = e.as<Mod>())
    return binary(op, [](int64_t a, int64_t b) { return b > 0 && a >= 0 ? V(a % b) : V(); });
  if (const auto *op = e.as<Min>())
    return binary(op, [](int64_t a, int64_t b) { return V(std::min(a, b)); });
  if (const auto *op = e.as<Max>())
    return binary(op, [](int64_t a, int64_t b) { return V(std::max(a, b)); });
  if (const auto *op = e.as<EQ>())
    return binary(op, [](int64_t a, int64_t b) { return V(a == b); });
  if (const auto *op = e.as<NE>())
    return binary(op, [](int64_t a, int64_t b) { return V(a != b); });
  if (const auto *op = e.as<LT>())
    return binary(op, [](int64_t a, int64_t b) { return V(a < b); });
  if (const auto *op = e.as<LE>())
    return binary(op, [](int64_t a, int64_t b) { return V(a <= b); });
  if (const auto *op = e.as<GT>())
    return binary(op, [](int64_t a, int64_t b) { return V(a > b); });
  if (const auto *op = e.as<GE>())
    return binary(op, [](int64_t a, int64_t b) { return V(a >= b); });
  if (const auto *op = e.as<And>())
    return binary(op, [](int64_t a, int64_t b) { return V(a != 0 && b != 0); });
  if (const auto *op = e.as<Or>())
    return binary(op, [](int64_t a, int64_t b) { return V(a != 0 || b != 0); });
  return std::nullopt;
}

} // namespace coalesce
