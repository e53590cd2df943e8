#include "codegen/CheckTargetInstructions.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

void check_target_instructions(const GpuProgram &program, const GpuTarget &target) {
  struct Finder : IRVisitor {
    const WarpMma *found = nullptr;
    const TensorCopy *copy = nullptr;
    const Cast *fp8 = nullptr; // a conversion to or from an 8-bit float
    using IRVisitor::visit;
    void visit(const Cast *op) override {
      if (!fp8 && (op->type.is_fp8() || op->value.type().is_fp8()))
        fp8 = op;
      IRVisitor::visit(op);
    }
    void visit(const WarpMma *op) override {
      if (is_warpgroup_mma(op->kind) && !found)
        found = op;
    }
    void visit(const TensorCopy *op) override {
      if (!copy)
        copy = op;
    }
  };
  for (const GpuKernel &kernel : program.kernels) {
    Finder finder;
    finder.visit_stmt(kernel.body);
    if (finder.found && !target.has_warpgroup_mma())
      user_error("kernel '", kernel.name, "' uses warpgroup MMAs (", mma_kind_name(finder.found->kind),
                 "), which only target sm_90a has; the target is ", target.sm(),
                 ": compile for sm_90a, or schedule a warp MMA (bf16 m16n8k16) for this target");
    if (finder.copy && !target.has_tma())
      user_error("kernel '", kernel.name, "' copies '", finder.copy->input,
                 "' with the TMA (TmaCopies), "
                 "which this compiler targets on sm_90a only; the target is ",
                 target.sm(), ": compile for sm_90a, or stage with cp.async copies (AsyncCopies)");
    if (finder.fp8 && !target.has_fp8_conversions())
      user_error("kernel '", kernel.name, "' converts ", finder.fp8->value.type(), " values to ", finder.fp8->type,
                 ", which PTX does on sm_89 and later only; the target is ", target.sm(),
                 ": compile for sm_89, sm_90 or sm_90a");
    if (kernel.cluster_blocks() > 1 && !target.has_clusters())
      user_error("kernel '", kernel.name, "' runs its blocks in clusters of ", kernel.cluster_blocks(),
                 " (gpu_cluster), which this compiler targets on sm_90a only; the target is ", target.sm(),
                 ": compile for sm_90a, or leave gpu_cluster out");
  }
}

} // namespace coalesce
