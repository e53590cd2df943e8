#include "scheduler/CheckRunOnGpu.h"

#include "dsl/Error.h"

#include <algorithm>
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

void check_features_run_on_gpu(const Environment &env) {
  const FuncContents &output = env.output();
  const StageSchedule &pure = output.schedule.stages.front();
  const auto block_loops =
      std::count_if(pure.dims.begin(), pure.dims.end(), [](const Dim &d) { return d.kind == ForKind::GpuBlock; });
  const bool ffma = pure.mma_layout.kind == MmaKind::None;
  // The tensor-core schedules' batches and views have run on a GPU; FFMA's
  // not yet.
  if (ffma && !allowed("ffma-views"))
    for (const auto &[name, input] : env.inputs)
      if (!input->strides.empty())
        user_error("input '", name, "' is a view (strides) read by '", output.name,
                   "' on FFMA (no mma_tile), which is unverified on a GPU: it has run on the CPU only, and the "
                   "library compiles it for a GPU once `coalesce-gpu-check --precisions=fp32 --sections=strided` has "
                   "passed it. Run it on the CPU, pass a dense copy or run it on tensor cores, or set "
                   "COALESCE_UNVERIFIED_GPU=ffma-views to compile it for a GPU anyway");
  if (block_loops >= 3 && ffma && !allowed("ffma-batch"))
    user_error("output '", output.name, "' runs a batch of products on FFMA (", block_loops,
               " block loops, no mma_tile), which is unverified on a GPU: it has run on the CPU only, and the "
               "library compiles it for a GPU once `coalesce-gpu-check --precisions=fp32 --sections=batched` has "
               "passed it. Run it on the CPU, run the products one by one or on tensor cores, or set "
               "COALESCE_UNVERIFIED_GPU=ffma-batch to compile it for a GPU anyway");
}

} // namespace coalesce
