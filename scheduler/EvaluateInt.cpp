#include "scheduler/EvaluateInt.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

namespace coalesce {

int64_t evaluate_int(const Expr &e, const std::map<std::string, int64_t> &values) {
  std::map<std::string, Expr> replacements;
  for (const auto &[name, value] : values)
    replacements[name] = IntImm::make(Int(32), value);
  Expr folded = simplify(substitute(replacements, e));
  auto result = as_const_int(folded);
  if (!result)
    user_error("cannot evaluate ", to_string(e), ": it needs a value for ", to_string(folded));
  return *result;
}

} // namespace coalesce
