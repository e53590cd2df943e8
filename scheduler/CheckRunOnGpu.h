#pragma once
// Front-end check of the GPU path (lower_gpu_nest_unverified): schedule
// features that have run on the CPU only, and not yet on a GPU, are refused
// for a GPU with a UserError saying so. GPU code counts as done once it
// has run on the GPU: a feature landed without one stays refused until
// `coalesce-gpu-check` passes it (its section named in the message) and
// the feature leaves this list.
//
// Not yet run on a GPU:
//   - ffma-batch: a batch of products on FFMA (an output without an MMA
//     layout whose blocks walk three dimensions, the batch's outermost:
//     schedule_gemm on out(b, i, j)) (coalesce-gpu-check --precisions=fp32
//     --sections=batched);
//   - ffma-views: an input that is a view (Input's strides) read on FFMA
//     (coalesce-gpu-check --precisions=fp32 --sections=strided).
//
// The check itself must compile what it verifies: the environment variable
// COALESCE_UNVERIFIED_GPU, a comma-separated list of the features' names,
// lets those through. coalesce-gpu-check sets it for its own section; a
// user may set it to try a feature at their own risk.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError for a feature the output's schedule asks for that has
/// not run on a GPU, unless COALESCE_UNVERIFIED_GPU names it.
void check_features_run_on_gpu(const Environment &env);

} // namespace coalesce
