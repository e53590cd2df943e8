#pragma once
// Front-end check of the GPU path (lower_gpu_nest): schedule features that
// have run on the CPU only, and not yet through `coalesce-gpu-check`, are
// refused for a GPU with a UserError saying so. GPU code counts as done
// once it has run on the GPU: a feature landed without its check stays
// refused until `coalesce-gpu-check` passes it on an H200 or H100 (its
// section named in the message) and the feature leaves this list.
//
// Unverified now:
//   - split_k_tail (coalesce-gpu-check --sections=split-k, whose tail cases
//     run it, and its --sanitizer-case --sanitizer-cases=split-k). Its
//     lowering, the work units and the arrival with a count known at run
//     time, has run on the CPU and through ptxas only.
//
// The check itself must compile what it verifies: the environment variable
// COALESCE_UNVERIFIED_GPU, a comma-separated list of the features' names
// (as the message gives them), lets those through. coalesce-gpu-check sets
// it for its own cases; a user may set it to try a feature at their risk.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError for an unverified feature the output's schedule asks
/// for, unless COALESCE_UNVERIFIED_GPU names it.
void check_gpu_verified(const Environment &env);

} // namespace coalesce
