#include "scheduler/StartMmaAtZero.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Substitute.h"

#include <map>

namespace coalesce {

namespace {

// A Func that starts its warpgroup-MMA sum from a value other than 0: one
// update, acc(...) + term, on wgmma, its order free (allow_reassociation).
bool starts_mma_sum_elsewhere(const FuncContents &func) {
  if (func.updates.size() != 1 || func.schedule.stages.size() < 2)
    return false;
  const StageSchedule &update = func.schedule.stages[1];
  if (!is_warpgroup_mma(update.mma.kind) || !update.allow_reassociation)
    return false;
  const auto *add = func.updates[0].value.as<Add>();
  const auto *self = add ? add->a.as<Call>() : nullptr;
  if (!self || self->name != func.name)
    return false;
  const auto *zero = func.pure.value.as<FloatImm>();
  return !zero || zero->value != 0.0;
}

// Each read func(args) becomes func(args) + init(args).
class AddInitToReads : public IRMutator {
public:
  AddInitToReads(const FuncContents &func, Expr init) : func_(func), init_(std::move(init)) {}

private:
  using IRMutator::visit;
  const FuncContents &func_;
  Expr init_;
  Expr visit(const Call *op, const Expr &self) override {
    Expr call = IRMutator::visit(op, self);
    if (op->call_type != CallType::Func || op->name != func_.name)
      return call;
    const auto *rebuilt = call.as<Call>();
    std::map<std::string, Expr> at;
    for (size_t d = 0; d < func_.pure_vars.size() && d < rebuilt->args.size(); ++d)
      at[func_.pure_vars[d]] = rebuilt->args[d];
    return call + substitute(at, init_);
  }
};

} // namespace

void start_mma_accumulators_at_zero(Environment &env) {
  for (FuncContents &func : env.funcs) {
    if (!starts_mma_sum_elsewhere(func))
      continue;
    std::vector<std::string> consumers = env.consumers_of(func.name);
    if (consumers.empty())
      continue; // the output itself: nothing reads it to add the value to
    AddInitToReads add(func, func.pure.value);
    for (const std::string &name : consumers) {
      FuncContents &consumer = *env.find(name);
      consumer.pure.value = add.mutate(consumer.pure.value);
      for (Definition &update : consumer.updates)
        update.value = add.mutate(update.value);
    }
    func.pure.value = make_zero(func.type);
  }
}

} // namespace coalesce
