#include "scheduler/CountBarriers.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

Stmt count_barriers(const Stmt &s, int threads) {
  class Count : public IRMutator {
  public:
    explicit Count(int threads) : threads_(threads) {}

  private:
    using IRMutator::visit;
    int threads_;
    Stmt visit(const Barrier *op, const Stmt &self) override {
      COALESCE_INTERNAL_ASSERT(op->threads == 0 || op->threads == threads_, "a barrier of ", op->threads,
                               " threads inside a part of the block's first ", threads_);
      return op->threads == threads_ ? self : Barrier::make(threads_);
    }
  } count(threads);
  return count.mutate(s);
}

} // namespace coalesce
