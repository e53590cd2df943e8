#include "scheduler/RefuseUnverifiedKernels.h"

#include "dsl/Error.h"

#include <cstdlib>
#include <string>
#include <variant>

namespace coalesce {

void refuse_unverified_gpu_kernels(const Environment &env) {
  static const bool allowed = [] {
    const char *flag = std::getenv("COALESCE_ALLOW_UNVERIFIED");
    return flag && std::string(flag) == "1";
  }();
  if (allowed)
    return;
  const char *how = "; it runs on the CPU, and COALESCE_ALLOW_UNVERIFIED=1 compiles it for the GPU anyway";
  for (const FuncContents &func : env.funcs) {
    if (!func.schedule.fused_reduction_with.empty())
      user_error("in schedule for '", func.name, "': fuse_reduction_with('", func.schedule.fused_reduction_with,
                 "') runs on the CPU only so far: its GPU kernels have not been checked on a GPU yet (unverified)",
                 how);
    // 8-bit inputs have run on the GPU staged by the TMA, by cp.async copies
    // and in one buffer (coalesce-gpu-check's FP8 cases), not yet through
    // registers.
    for (const StageSchedule &stage : func.schedule.stages)
      for (const SharedStaging &staged : stage.staged_inputs) {
        auto input = env.inputs.find(staged.input);
        if (input == env.inputs.end() || !input->second->type.is_fp8() ||
            !std::holds_alternative<RegisterDoubleBuffer>(staged.copies))
          continue;
        user_error("in schedule for '", func.name, "': the ", input->second->type, " input '", staged.input,
                   "' staged by registers (RegisterDoubleBuffer) has not been run on a GPU yet (unverified): stage "
                   "it with TmaCopies (the warpgroup MMA's default), AsyncCopies or one buffer (OneBuffer)",
                   how);
      }
  }
}

} // namespace coalesce
