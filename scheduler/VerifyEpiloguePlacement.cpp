#include "scheduler/VerifyEpiloguePlacement.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {
class Verify : public IRVisitor {
public:
  explicit Verify(const Environment &env) : env_(env) {}

private:
  using IRVisitor::visit;
  void visit(const For *op) override {
    if (op->reduction_of.empty())
      return IRVisitor::visit(op);
    enclosing_.push_back(op);
    IRVisitor::visit(op);
    enclosing_.pop_back();
  }
  void visit(const Store *op) override {
    IRVisitor::visit(op);
    if (!env_.find(op->buffer))
      return; // a staged copy of an input, not a Func's value
    for (const For *loop : enclosing_)
      if (!loop->reduces(op->buffer))
        internal_error("the store to '", op->buffer, "' is inside loop '", loop->name, "', a reduction loop of '",
                       loop->reduction_of.front(), "' only: an epilogue would see partial sums");
  }
  const Environment &env_;
  std::vector<const For *> enclosing_;
};
} // namespace

void verify_epilogue_placement(const Stmt &s, const Environment &env) { Verify(env).visit_stmt(s); }

} // namespace coalesce
