#pragma once
// Front-end check of the GPU path (lower_gpu_nest): schedule features that
// have run on the CPU only, and not yet on a GPU, are refused for a GPU
// with a UserError saying so. GPU code counts as done once it has run on
// the GPU: a feature landed without one stays refused until
// `coalesce-gpu-check` passes it on an H200 (its section named in the
// message) and the feature leaves this list.
//
// Unverified now:
//   - an output that is a view (Func::output_strides)
//     (coalesce-gpu-check --sections=strided);
//   - a persistent grid walking a batch's tiles (gpu_persistent_blocks
//     with three block loops) (coalesce-gpu-check --sections=batched);
//   - an input that is a view with a batch (strides over three or more
//     dimensions) (coalesce-gpu-check --sections=batched);
//   - producer warps that leave the kernel (register reallocation) before
//     barriers of the whole block that follow their pipeline outside any
//     guard (a staged output tile's where the shape is fixed and every
//     tile whole), which split_warp_roles counts for the MMA warps alone
//     (coalesce-gpu-check --sections=mma). Found in the lowered nest
//     (check_gpu_verified_nest): the schedule alone does not show it.
//
// The check itself must compile what it verifies: the environment variable
// COALESCE_UNVERIFIED_GPU, a comma-separated list of the features' names
// (as the message gives them), lets those through. coalesce-gpu-check sets
// it for its own section; a user may set it to try a feature at their risk.

#include "scheduler/Environment.h"

#include <string>

namespace coalesce {

/// Throws a UserError for an unverified feature the output's schedule asks
/// for, unless COALESCE_UNVERIFIED_GPU names it.
void check_gpu_verified(const Environment &env);

/// The same for forms the schedule alone does not show, on the lowered
/// serial nest of the GPU path (lower_gpu_nest).
void check_gpu_verified_nest(const Stmt &serial, const std::string &output);

} // namespace coalesce
