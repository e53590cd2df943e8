#pragma once
// Which of LLVM's passes a GPU kernel's compile runs, beyond what the
// optimization levels choose: the NVPTX backend's own IR passes that code
// generation skips. Part of the PTX cache's key (gpu_pass_choices), since
// they change the PTX.

#include <string>

namespace llvm {
class LLVMContext;
class OptPassGate;
} // namespace llvm

namespace coalesce {

/// The NVPTX code generation passes skipped, by their LLVM argument names
/// ("slsr" is straight-line strength reduction), comma-separated:
/// COALESCE_NVPTX_SKIP if it is set ("none": skip nothing), else the
/// default, nothing (docs/performance.md, "Straight-line strength
/// reduction"). For experiments: a skipped pass changes the kernels. Not
/// every pass asks the gate: "loop-reduce" (loop strength reduction) skips
/// nothing here, though llc -disable-lsr changes the PTX of every default
/// kernel, so PTX unchanged under a skip proves nothing until the pass's
/// time is seen to go.
const std::string &skipped_nvptx_passes();

/// A description of every pass choice in effect, for the PTX cache's key:
/// the skipped NVPTX passes and an experiment's COALESCE_GPU_PASSES.
std::string gpu_pass_choices();

/// The pass gate that skips `skipped_nvptx_passes()`: set on the context of
/// the module whose code generation it governs, for the gate's lifetime.
class SkippedNvptxPasses {
public:
  explicit SkippedNvptxPasses(llvm::LLVMContext &context);
  ~SkippedNvptxPasses();
  SkippedNvptxPasses(const SkippedNvptxPasses &) = delete;
  SkippedNvptxPasses &operator=(const SkippedNvptxPasses &) = delete;

private:
  llvm::LLVMContext &context_;
  llvm::OptPassGate *previous_;
  struct Gate;
  Gate *gate_;
};

} // namespace coalesce
