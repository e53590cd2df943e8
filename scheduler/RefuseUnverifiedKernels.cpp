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
  for (const FuncContents &func : env.funcs)
    for (size_t s = 1; s < func.schedule.stages.size(); ++s) {
      // Swap-AB: before its rows' operand came first, such a tile computed
      // the transposed product on the GPU; the fixed form has not run there.
      const StageSchedule &stage = func.schedule.stages[s];
      if (stage.mma.kind != MmaKind::None && stage.mma_layout.rows_dim == 1)
        user_error("in schedule for '", func.name, "': an MMA tile whose rows run along '", func.pure_vars[1],
                   "' (swap-AB, ", mma_kind_name(stage.mma.kind), ") has not been run on a GPU yet (unverified)",
                   how);
      // Warpgroup tiles narrower than a multiple of 64 columns (a K-major
      // second operand of 8 to 56 rows, a TMA box as narrow).
      if (is_warpgroup_mma(stage.mma.kind) && stage.mma_layout.warp_n % 64)
        user_error("in schedule for '", func.name, "': a warpgroup MMA tile of 64 x ", stage.mma_layout.warp_n,
                   " (N not a multiple of 64) has not been run on a GPU yet (unverified)", how);
    }
}

} // namespace coalesce
