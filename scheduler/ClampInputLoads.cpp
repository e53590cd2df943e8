#include "scheduler/ClampInputLoads.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {
class Clamp : public IRMutator {
  using IRMutator::visit;
  Expr visit(const Call *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *call = e.as<Call>();
    if (call->call_type != CallType::Input)
      return e;
    std::vector<Expr> indices;
    for (size_t d = 0; d < call->args.size(); ++d)
      indices.push_back(clamp(call->args[d], 0, call->input->extents[d] - 1));
    return Load::make(call->type, call->name, indices);
  }
};
} // namespace

Stmt clamp_input_loads(const Stmt &s) { return Clamp().mutate(s); }

} // namespace coalesce
