#include "scheduler/UnrollLoops.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

namespace coalesce {

namespace {
class Unroll : public IRMutator {
  using IRMutator::visit;
  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind != ForKind::Unrolled)
      return IRMutator::visit(op, self);
    auto extent = as_const_int(simplify(op->extent));
    COALESCE_INTERNAL_ASSERT(extent, "unrolled loop '", op->name, "' has no constant extent");
    Stmt body = mutate(op->body);
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *extent; ++i)
      copies.push_back(substitute({{op->name, simplify(op->min + static_cast<int>(i))}}, body));
    return Block::make(copies);
  }
};
} // namespace

Stmt unroll_loops(const Stmt &s) { return Unroll().mutate(s); }

} // namespace coalesce
