#include "scheduler/CheckGpuVerified.h"

#include "dsl/Error.h"

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
  const FuncContents &output = env.output();
  if (output.schedule.tile_stores == TileStores::SumsThroughShared && !allowed("tile-stores-sums"))
    user_error("in schedule for '", output.name,
               "': gpu_tile_stores(TileStores::SumsThroughShared) is unverified on a GPU: it has run on the CPU "
               "only (bit-equal to direct stores there), and the library compiles it for a GPU once "
               "`coalesce-gpu-check --sections=tile-stores` has passed it on an H200. Use TileStores::ThroughShared "
               "or TileStores::Direct (the same result), run it on the CPU, or set "
               "COALESCE_UNVERIFIED_GPU=tile-stores-sums to compile it for a GPU anyway");
  for (const auto &[name, input] : env.inputs)
    if (!input->strides.empty() && !allowed("strided-inputs"))
      user_error("input '", name,
                 "' is a view with strides, which is unverified on a GPU: it has run on the CPU "
                 "only, and the library compiles it for a GPU once `coalesce-gpu-check --sections=strided` has "
                 "passed it on an H200. Run it on the CPU, pass a dense copy, or set "
                 "COALESCE_UNVERIFIED_GPU=strided-inputs to compile it for a GPU anyway");
  for (const FuncContents &func : env.funcs)
    for (const StageSchedule &stage : func.schedule.stages)
      if (stage.mma.kind != MmaKind::None && func.pure_vars.size() > 2 && !allowed("batched-mma"))
        user_error("in schedule for '", func.name, "': a batch of tensor-core products (", func.name, " has ",
                   func.pure_vars.size() - 2, " batch dimension", func.pure_vars.size() > 3 ? "s" : "",
                   " before its last two) is unverified on a GPU: it has run on the CPU only, and the library "
                   "compiles it for a GPU once `coalesce-gpu-check --sections=batched` has passed it on an H200. "
                   "Run it on the CPU, schedule it without mma() (FFMA), or set "
                   "COALESCE_UNVERIFIED_GPU=batched-mma to compile it for a GPU anyway");
}

} // namespace coalesce
