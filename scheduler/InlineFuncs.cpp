#include "scheduler/InlineFuncs.h"

#include "dsl/IRVisitor.h"
#include "scheduler/Substitute.h"

namespace coalesce {

namespace {
class InlineCalls : public IRMutator {
public:
  explicit InlineCalls(const FuncContents &callee) : callee_(callee) {}

private:
  using IRMutator::visit;
  Expr visit(const Call *op, const Expr &self) override {
    Expr call = IRMutator::visit(op, self);
    const auto *rebuilt = call.as<Call>();
    if (!rebuilt || rebuilt->call_type != CallType::Func || rebuilt->name != callee_.name)
      return call;
    std::map<std::string, Expr> args;
    for (size_t d = 0; d < callee_.pure_vars.size(); ++d)
      args[callee_.pure_vars[d]] = rebuilt->args[d];
    return substitute(args, callee_.pure.value);
  }
  const FuncContents &callee_;
};
} // namespace

void inline_funcs(Environment &env) {
  // Callers come after callees, so walking forward inlines chains fully.
  std::vector<FuncContents> kept;
  for (size_t f = 0; f < env.funcs.size(); ++f) {
    const FuncContents &callee = env.funcs[f];
    if (callee.schedule.placement != Placement::Inline) {
      kept.push_back(callee);
      continue;
    }
    for (size_t g = f + 1; g < env.funcs.size(); ++g) {
      FuncContents &caller = env.funcs[g];
      caller.pure.value = InlineCalls(callee).mutate(caller.pure.value);
      for (Definition &update : caller.updates)
        update.value = InlineCalls(callee).mutate(update.value);
    }
  }
  env.funcs = kept;
}

} // namespace coalesce
