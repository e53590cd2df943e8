#include "scheduler/RollHostLoops.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <algorithm>

namespace coalesce {

namespace {

class Roll : public IRMutator {
public:
  explicit Roll(int max_copies) : max_copies_(max_copies) {}

private:
  using IRMutator::visit;
  const int max_copies_;
  // The copies the unrolled loops of the statement being rebuilt make (the
  // most along any path), filled in bottom-up.
  int64_t copies_ = 1;

  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> stmts;
    int64_t most = 1;
    for (const Stmt &s : op->stmts) {
      copies_ = 1;
      stmts.push_back(mutate(s));
      most = std::max(most, copies_);
    }
    copies_ = most;
    return Block::make(stmts);
  }

  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    copies_ = 1;
    Stmt then_case = mutate(op->then_case);
    int64_t then_copies = copies_;
    copies_ = 1;
    Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
    copies_ = std::max(then_copies, copies_);
    return IfThenElse::make(op->condition, then_case, else_case);
  }

  Stmt visit(const For *op, const Stmt &self) override {
    copies_ = 1;
    Stmt body = mutate(op->body);
    auto extent = as_const_int(op->extent);
    ForKind kind = op->for_kind;
    if (kind == ForKind::Unrolled && extent) {
      if (*extent * copies_ <= max_copies_)
        copies_ *= *extent;
      else
        kind = ForKind::Serial; // the copies inside stay unrolled
    }
    return For::make(op->name, op->min, op->extent, kind, body, op->gpu_dim, op->reduction_of, op->role);
  }
};

} // namespace

Stmt roll_large_unrolled_loops(const Stmt &s, int max_copies) { return Roll(max_copies).mutate(s); }

} // namespace coalesce
