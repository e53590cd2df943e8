#include "scheduler/VerifyTensorCopies.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IRPrinter.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/PadTmaInputs.h"
#include "scheduler/Simplify.h"
#include "scheduler/StageWithTma.h"

#include <set>

namespace coalesce {

namespace {

// The conjuncts of a condition: a && b && c -> a, b, c.
void conjuncts(const Expr &e, std::vector<Expr> &out) {
  if (const auto *both = e.as<And>()) {
    conjuncts(both->a, out);
    conjuncts(both->b, out);
    return;
  }
  out.push_back(e);
}

class Verify : public IRVisitor {
public:
  explicit Verify(const Environment &env) : env_(env) {
    for (const InputContents *input : tma_padded_inputs(env))
      padded_.insert(tma_padded_name(input->name));
  }

private:
  using IRVisitor::visit;
  void visit(const IfThenElse *op) override {
    visit_expr(op->condition);
    size_t known = holding_.size();
    conjuncts(op->condition, holding_);
    visit_stmt(op->then_case);
    holding_.resize(known);
    visit_stmt(op->else_case);
  }
  void visit(const TensorCopy *op) override {
    IRVisitor::visit(op);
    if (padded_.count(op->input))
      return;
    auto input = env_.inputs.find(op->input);
    if (input == env_.inputs.end())
      internal_error("a TMA copy reads '", op->input, "', which is neither an input nor a row-padded copy of one");
    Expr describable = simplify(tma_describable(input->second->type, input->second->extents));
    if (auto constant = as_const_int(describable); constant && *constant != 0)
      return;
    std::vector<Expr> needed;
    conjuncts(describable, needed);
    for (const Expr &need : needed) {
      bool checked = false;
      for (const Expr &held : holding_)
        checked |= equal(held, need);
      if (!checked)
        internal_error("a TMA copy of '", op->input, "' is not under the test that its rows are whole 16-byte "
                       "multiples (", to_string(need), "): where they are not, its tensor map is left zeroed");
    }
  }
  const Environment &env_;
  std::set<std::string> padded_;
  std::vector<Expr> holding_; // conjuncts of the enclosing then-branches' conditions
};

} // namespace

void verify_tensor_copies(const Stmt &s, const Environment &env) { Verify(env).visit_stmt(s); }

} // namespace coalesce
