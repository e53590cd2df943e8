#include "runtime/aot/CppExpression.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"

namespace coalesce {

std::string cpp_int(const Expr &e) {
  auto binary = [](const auto *op, const char *symbol) {
    return "(" + cpp_int(op->a) + " " + symbol + " " + cpp_int(op->b) + ")";
  };
  if (const auto *op = e.as<IntImm>())
    return "int64_t(" + std::to_string(op->value) + ")";
  if (const auto *op = e.as<Variable>()) {
    if (op->variable_kind != VariableKind::Param)
      internal_error("launcher expression mentions loop variable '", op->name, "'");
    return "int64_t(" + op->name + ")";
  }
  if (const auto *op = e.as<Add>())
    return binary(op, "+");
  if (const auto *op = e.as<Sub>())
    return binary(op, "-");
  if (const auto *op = e.as<Mul>())
    return binary(op, "*");
  if (const auto *op = e.as<Div>())
    return binary(op, "/");
  if (const auto *op = e.as<Mod>())
    return binary(op, "%");
  if (const auto *op = e.as<Min>())
    return "std::min(" + cpp_int(op->a) + ", " + cpp_int(op->b) + ")";
  if (const auto *op = e.as<Max>())
    return "std::max(" + cpp_int(op->a) + ", " + cpp_int(op->b) + ")";
  if (const auto *op = e.as<LT>())
    return binary(op, "<");
  if (const auto *op = e.as<LE>())
    return binary(op, "<=");
  if (const auto *op = e.as<GT>())
    return binary(op, ">");
  if (const auto *op = e.as<GE>())
    return binary(op, ">=");
  if (const auto *op = e.as<EQ>())
    return binary(op, "==");
  if (const auto *op = e.as<NE>())
    return binary(op, "!=");
  if (const auto *op = e.as<And>())
    return binary(op, "&&");
  if (const auto *op = e.as<Or>())
    return binary(op, "||");
  if (const auto *op = e.as<Not>())
    return "(!" + cpp_int(op->a) + ")";
  if (const auto *op = e.as<Select>())
    return "(" + cpp_int(op->condition) + " ? " + cpp_int(op->true_value) + " : " +
           cpp_int(op->false_value) + ")";
  if (const auto *op = e.as<Cast>(); op && op->type.is_int())
    return cpp_int(op->value);
  user_error("the launcher cannot compute '", to_string(e),
             "' (a grid or buffer extent) from the sizes: only integer arithmetic of sizes is "
             "supported");
}

} // namespace coalesce
