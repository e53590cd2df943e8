#include "scheduler/ReductionUpdate.h"

namespace coalesce {

using internal::FuncContents;

bool is_self_call(const Expr &e, const FuncContents &func) {
  const auto *call = e.as<Call>();
  if (!call || call->call_type != CallType::Func || call->name != func.name ||
      call->args.size() != func.pure_vars.size())
    return false;
  for (size_t d = 0; d < call->args.size(); ++d) {
    const auto *var = call->args[d].as<Variable>();
    if (!var || var->name != func.pure_vars[d])
      return false;
  }
  return true;
}

// Splits value into (operator, term) if it is self OP term or term OP self.
bool split_reduction(const Expr &value, const FuncContents &func, const char **op_name, Expr *term) {
  auto match = [&](const Expr &a, const Expr &b, bool commutes, const char *name) {
    if (is_self_call(a, func)) {
      *op_name = name;
      *term = b;
      return true;
    }
    if (commutes && is_self_call(b, func)) {
      *op_name = name;
      *term = a;
      return true;
    }
    return false;
  };
  if (const auto *op = value.as<Add>())
    return match(op->a, op->b, true, "+");
  if (const auto *op = value.as<Sub>())
    return match(op->a, op->b, false, "+");
  if (const auto *op = value.as<Mul>())
    return match(op->a, op->b, true, "*");
  if (const auto *op = value.as<Min>())
    return match(op->a, op->b, true, "min");
  if (const auto *op = value.as<Max>())
    return match(op->a, op->b, true, "max");
  return false;
}

} // namespace coalesce
