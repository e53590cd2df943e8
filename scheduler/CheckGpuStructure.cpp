#include "scheduler/CheckGpuStructure.h"

#include "dsl/IRVisitor.h"
#include "scheduler/FuseGpuThreadLoops.h"

namespace coalesce {

namespace {

bool has_gpu_loops(const Stmt &s) {
  class Find : public IRVisitor {
  public:
    bool found = false;

  private:
    using IRVisitor::visit;
    void visit(const For *op) override {
      found |= op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread;
      if (!found)
        IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.found;
}

} // namespace

void check_gpu_structure(const Stmt &s, const std::string &name) {
  if (has_gpu_loops(s))
    (void)fuse_gpu_thread_loops(s, name);
}

} // namespace coalesce
