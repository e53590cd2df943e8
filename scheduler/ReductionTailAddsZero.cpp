#include "scheduler/ReductionTailAddsZero.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "scheduler/ReductionUpdate.h"
#include "scheduler/Simplify.h"

#include <algorithm>
#include <string>

namespace coalesce {

using internal::FuncContents;

namespace {

class ZeroPastEnd {
public:
  ZeroPastEnd(const FuncContents &func, size_t stage, const std::string &rvar, Expr end)
      : func_(func), stage_(stage), rvar_(rvar), end_(std::move(end)) {}

  // Whether `e` is a product (through casts: a cast of 0 is 0 in every
  // type) of factors that are each 0 past the end. Every factor must be:
  // one that is not could be an Inf or a NaN there, and 0 * Inf is NaN.
  bool product(const Expr &e) const {
    if (const auto *mul = e.as<Mul>())
      return product(mul->a) && product(mul->b);
    if (const auto *cast = e.as<Cast>())
      return product(cast->value);
    return factor(e);
  }

private:
  bool factor(const Expr &e) const {
    const auto *call = e.as<Call>();
    if (!call || call->call_type != CallType::Input || !call->input)
      return false;
    const auto &staged = func_.schedule.stages[stage_].staged_inputs;
    auto tile =
        std::find_if(staged.begin(), staged.end(), [&](const SharedStaging &s) { return s.input == call->name; });
    if (tile == staged.end() || !zero_fills(tile->copies))
      return false;
    // Read at the reduction variable itself along exactly one dimension,
    // where the input ends as the reduction does; it alone decides.
    int along = -1;
    for (size_t d = 0; d < call->args.size(); ++d) {
      const auto *var = call->args[d].as<Variable>();
      if (var && var->name == rvar_ && along < 0) {
        along = static_cast<int>(d);
        continue;
      }
      if (expr_uses_var(call->args[d], rvar_))
        return false;
    }
    return along >= 0 && equal(simplify(call->input->extents[static_cast<size_t>(along)]), end_);
  }

  const FuncContents &func_;
  size_t stage_;
  const std::string &rvar_;
  Expr end_;
};

} // namespace

bool reduction_tail_adds_zero(const FuncContents &func, size_t stage, const std::string &rvar, const Expr &min,
                              const Expr &extent) {
  if (stage == 0 || stage > func.updates.size())
    return false;
  const char *op = nullptr;
  Expr term;
  if (!split_reduction(func.updates[stage - 1].value, func, &op, &term) || std::string(op) != "+")
    return false;
  return ZeroPastEnd(func, stage, rvar, simplify(min + extent)).product(term);
}

} // namespace coalesce
