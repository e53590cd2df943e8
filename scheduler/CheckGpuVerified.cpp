#include "scheduler/CheckGpuVerified.h"

#include "dsl/Error.h"
#include "scheduler/LoopNames.h"

#include <cstdlib>
#include <sstream>
#include <string>

namespace coalesce {

namespace {

// Whether COALESCE_UNVERIFIED_GPU names `feature`.
bool allowed(const std::string &feature) {
  const char *list = std::getenv("COALESCE_UNVERIFIED_GPU");
  if (!list)
    return false;
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');)
    if (name == feature)
      return true;
  return false;
}

} // namespace

void check_gpu_verified(const Environment &env) {
  for (const FuncContents &func : env.funcs)
    for (size_t s = 0; s < func.schedule.stages.size(); ++s)
      if (mma_truncates_to_tf32(func.schedule.stages[s].mma.kind) && !allowed("tf32-truncated"))
        user_error("in schedule for ", stage_description(func, s), ": ",
                   mma_kind_name(func.schedule.stages[s].mma.kind),
                   " is unverified on a GPU: it has run on the CPU only, and the library compiles it for a GPU "
                   "once `coalesce-gpu-check --sections=tf32-truncated` has passed it on an H200. Run it on the "
                   "CPU, choose the tf32 kind that rounds (",
                   mma_kind_name(mma_kind_for(Float(32), is_warpgroup_mma(func.schedule.stages[s].mma.kind))),
                   "), or set COALESCE_UNVERIFIED_GPU=tf32-truncated to compile it for a GPU anyway");
}

} // namespace coalesce
