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
  if (output.schedule.split_k.splits_tail_only() && !allowed("split-k-tail"))
    user_error("output '", output.name,
               "' splits only its last tiles' reduction (split_k_tail), which is "
               "unverified on a GPU: it has run on the CPU and through ptxas only; the library compiles it for a "
               "GPU once `coalesce-gpu-check --sections=split-k` has passed it. Run it on the CPU, split every "
               "tile (split_k alone), or set COALESCE_UNVERIFIED_GPU=split-k-tail to compile it for a GPU anyway");
}

} // namespace coalesce
