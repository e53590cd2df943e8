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
  if (!output.output_strides.empty() && !allowed("output-views"))
    user_error("output '", output.name,
               "' is a view with strides (output_strides), which is unverified on a GPU: it has run on the CPU "
               "only, and the library compiles it for a GPU once `coalesce-gpu-check --sections=strided` has "
               "passed it on an H200. Run it on the CPU, write a dense output, or set "
               "COALESCE_UNVERIFIED_GPU=output-views to compile it for a GPU anyway");
}

} // namespace coalesce
