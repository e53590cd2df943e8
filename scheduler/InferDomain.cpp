#include "scheduler/InferDomain.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {
class FindExtent : public IRVisitor {
public:
  FindExtent(const std::string &var) : var_(var) {}
  Expr extent;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (op->call_type != CallType::Input || extent.defined())
      return;
    for (size_t d = 0; d < op->args.size(); ++d)
      if (const auto *var = op->args[d].as<Variable>(); var && var->name == var_) {
        extent = op->input->extents[d];
        return;
      }
  }
  const std::string var_; // a copy: a caller may pass a temporary, and a reference would dangle
};
} // namespace

void infer_domain(Environment &env) {
  const FuncContents &output = env.output();
  env.domain.assign(output.pure_vars.size(), Expr());
  for (size_t p = 0; p < output.pure_vars.size(); ++p) {
    if (p < output.schedule.bounds.size() && output.schedule.bounds[p].defined()) {
      env.domain[p] = output.schedule.bounds[p];
      continue;
    }
    for (const FuncContents &func : env.funcs) {
      FindExtent finder(func.pure_vars[p]);
      finder.visit_expr(func.pure.value);
      for (const Definition &update : func.updates)
        finder.visit_expr(update.value);
      if (finder.extent.defined()) {
        env.domain[p] = finder.extent;
        break;
      }
    }
    if (!env.domain[p].defined())
      user_error("cannot infer the extent of '", output.name, "' along '", output.pure_vars[p],
                 "': no input is indexed by '", output.pure_vars[p], "' alone; state it with ", output.name,
                 ".bound(", output.pure_vars[p], ", extent)");
  }
}

} // namespace coalesce
