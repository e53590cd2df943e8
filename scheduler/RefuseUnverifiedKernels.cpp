#include "scheduler/RefuseUnverifiedKernels.h"

#include "dsl/Error.h"

#include <cstdlib>
#include <string>

namespace coalesce {

void refuse_unverified_gpu_kernels(const Environment &env) {
  // Read on every call, so a program may opt in at any point.
  const char *flag = std::getenv("COALESCE_ALLOW_UNVERIFIED");
  if (flag && std::string(flag) == "1")
    return;
  const char *how = "; it runs on the CPU, and COALESCE_ALLOW_UNVERIFIED=1 compiles it for the GPU anyway";
  for (const FuncContents &func : env.funcs) {
    // Fused reductions have run on the GPU on FFMA (coalesce-gpu-check's
    // SwiGLU cases), not yet on tensor cores.
    if (!func.schedule.fused_reduction_with.empty() && func.schedule.stages.size() > 1 &&
        func.schedule.stages[1].mma.kind != MmaKind::None)
      user_error("in schedule for '", func.name, "': fuse_reduction_with('", func.schedule.fused_reduction_with,
                 "') on tensor cores (", mma_kind_name(func.schedule.stages[1].mma.kind),
                 ") has not been run on a GPU yet (unverified)", how);
  }
}

} // namespace coalesce
