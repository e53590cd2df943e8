#include "scheduler/UnverifiedFeatures.h"

namespace coalesce {

// FFMA reductions over zero-filled asynchronous copies: their element
// copies test only the tiles at the input's ends (ZeroFillTests), and a
// ragged K's last step runs in the one loop, unguarded
// (scheduler/ReductionTailAddsZero.h). The unguarded step with every tile
// tested passed coalesce-gpu-check's fp32 section on an H100; this form
// has not run on a GPU (docs/performance.md, "One k loop for FFMA").
std::vector<std::string> unverified_features(const Environment &env) {
  for (const FuncContents &func : env.funcs)
    for (size_t s = 1; s < func.schedule.stages.size(); ++s) {
      const StageSchedule &stage = func.schedule.stages[s];
      if (stage.mma.kind != MmaKind::None)
        continue;
      for (const SharedStaging &staged : stage.staged_inputs)
        if (std::holds_alternative<AsyncCopies>(staged.copies) && zero_fills(staged.copies))
          return {"FFMA reductions over zero-filled asynchronous copies (AsyncCopies::zero_fill on a stage without "
                  "tensor cores: copies tested only at the input's ends, the last k step unguarded; "
                  "coalesce-gpu-check --sections=fp32 with the recipe's copies zero-filled checks them)"};
    }
  return {};
}

} // namespace coalesce
