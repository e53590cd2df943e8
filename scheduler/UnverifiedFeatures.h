#pragma once
// Analysis: what a pipeline's schedule asks of the GPU that no GPU has run
// yet. The library lands such a form before a GPU has checked it only as
// refused: the runtime and coalesce-aot refuse programs that use it
// (runtime/RefuseUnverified.h), the CPU runs them, until
// coalesce-gpu-check has passed them on a GPU and the form leaves this list.

#include "scheduler/Environment.h"

#include <string>
#include <vector>

namespace coalesce {

/// Each unverified form the pipeline uses, in words that name the schedule
/// option and the coalesce-gpu-check section that checks it.
std::vector<std::string> unverified_features(const Environment &env);

} // namespace coalesce
