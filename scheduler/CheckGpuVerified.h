#pragma once
// Front-end check of the GPU path (lower_gpu_nest): schedule features that
// have run on the CPU only, and not yet on a GPU, are refused for a GPU
// with a UserError saying so. GPU code counts as done once it has run on
// the GPU: a feature landed without one stays refused until
// `coalesce-gpu-check` passes it on an H200 (its section named in the
// message) and the feature leaves this list.
//
// Unverified now:
//   - the truncating tf32 kinds (MmaKind::TF32Truncated_m16n8k8,
//     TF32Truncated_wgmma_m64k8): that the tensor cores multiply the top
//     19 bits of f32 operands, as truncate_to_tf32 does on the host, is
//     what coalesce-gpu-check --sections=tf32-truncated measures, bit for
//     bit.
//
// The check itself must compile what it verifies: the environment variable
// COALESCE_UNVERIFIED_GPU, a comma-separated list of the features' names
// (as the message gives them), lets those through. coalesce-gpu-check sets
// it for its own section; a user may set it to try a feature at their risk.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError for an unverified feature the pipeline's schedules
/// ask for, unless COALESCE_UNVERIFIED_GPU names it.
void check_gpu_verified(const Environment &env);

} // namespace coalesce
