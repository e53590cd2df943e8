#include "scheduler/PaddedReductionTail.h"

#include "dsl/IROperator.h"

namespace coalesce {

namespace {

bool reads_self(const Expr &e, const FuncContents &func) {
  const auto *call = e.as<Call>();
  if (!call || call->call_type != CallType::Func || call->name != func.name)
    return false;
  for (size_t d = 0; d < call->args.size(); ++d) {
    const auto *var = call->args[d].as<Variable>();
    if (!var || var->name != func.pure_vars[d])
      return false;
  }
  return true;
}

// The one coordinate of `input` that is exactly `var`; -1 if there is none,
// or if `var` appears anywhere else in its coordinates.
int coordinate_of(const Call *input, const std::string &var) {
  int found = -1;
  for (size_t d = 0; d < input->args.size(); ++d) {
    const auto *v = input->args[d].as<Variable>();
    if (v && v->name == var) {
      if (found >= 0)
        return -1;
      found = static_cast<int>(d);
    } else if (expr_uses_var(input->args[d], var)) {
      return -1;
    }
  }
  return found;
}

bool staged_at(const StageSchedule &stage, const std::string &input, const std::string &loop) {
  for (const SharedStaging &staged : stage.staged_inputs)
    if (staged.input == input && staged.at_loop == loop)
      return true;
  return false;
}

} // namespace

std::optional<PaddedTail> padded_reduction_tail(const FuncContents &func, size_t s) {
  if (s == 0 || s > func.updates.size())
    return std::nullopt;
  const StageSchedule &stage = func.schedule.stages[s];
  if (stage.reduction_vars.size() != 1)
    return std::nullopt;
  const std::string &k = stage.reduction_vars.front();
  const auto *sum = func.updates[s - 1].value.as<Add>();
  const auto *product = sum ? sum->b.as<Mul>() : nullptr;
  if (!sum || !product || !reads_self(sum->a, func) || sum->a.type() != Float(32))
    return std::nullopt;
  const auto *x = product->a.as<Call>();
  const auto *y = product->b.as<Call>();
  if (!x || !y || x->call_type != CallType::Input || y->call_type != CallType::Input || x->name == y->name)
    return std::nullopt;
  int x_dim = coordinate_of(x, k), y_dim = coordinate_of(y, k);
  if (x_dim < 0 || y_dim < 0)
    return std::nullopt;
  const Split *split = nullptr;
  for (const Split &candidate : stage.splits)
    if (candidate.old_var == k)
      split = &candidate;
  if (!split || !staged_at(stage, x->name, split->outer) || !staged_at(stage, y->name, split->outer))
    return std::nullopt;
  const auto *domain = x->args[x_dim].as<Variable>();
  return PaddedTail{k, split->outer, domain->reduction_min, domain->reduction_extent, x->name, y->name, x_dim, y_dim};
}

} // namespace coalesce
