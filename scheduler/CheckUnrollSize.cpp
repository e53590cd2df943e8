#include "scheduler/CheckUnrollSize.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "dsl/Limits.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

namespace coalesce {

namespace {

class Check : public IRVisitor {
  using IRVisitor::visit;
  std::vector<const For *> unrolled_; // enclosing unrolled loops, outermost first
  int64_t copies_ = 1;

  void visit(const For *op) override {
    if (op->for_kind != ForKind::Unrolled)
      return IRVisitor::visit(op);
    // Non-constant extents are reported by the pass that builds the loop.
    int64_t extent = as_const_int(simplify(op->extent)).value_or(1);
    int64_t before = copies_;
    copies_ *= std::max<int64_t>(extent, 1);
    unrolled_.push_back(op);
    if (copies_ > kMaxUnrolledCopies) {
      std::string loops;
      for (const For *loop : unrolled_)
        loops += str_cat(loops.empty() ? "" : " x ", "'", loop_short_name(loop->name), "' (",
                         as_const_int(simplify(loop->extent)).value_or(1), ")");
      user_error("in schedule for '", loop_owner(op->name), "': the unrolled loops ", loops, " make ", copies_,
                 " copies of their body, over the limit of ", kMaxUnrolledCopies,
                 " (kMaxUnrolledCopies, which keeps compile time bounded); unroll fewer or shorter loops (split a "
                 "long loop and unroll only its inner part, or use a smaller register block or K step)");
    }
    IRVisitor::visit(op);
    unrolled_.pop_back();
    copies_ = before;
  }
};

} // namespace

void check_unroll_size(const Stmt &s) { Check().visit_stmt(s); }

} // namespace coalesce
