#pragma once
// Front-end check of the GPU path (lower_gpu_nest): schedule features that
// have run on the CPU only, and not yet through `coalesce-gpu-check`, are
// refused for a GPU with a UserError saying so. GPU code counts as done
// once it has run on the GPU: a feature landed without its check stays
// refused until `coalesce-gpu-check` passes it on an H200 (its section
// named in the message) and the feature leaves this list.
//
// Unverified now:
//   - ping-pong consumers (gpu_consumer_schedule(ConsumerSchedule::PingPong))
//     (coalesce-gpu-check --sections=consumer-schedules). Its lowering ran
//     correctly on an H200 at whole tiles only (4096^3, 8192^3, 8192 x
//     11008 x 4096); ragged tiles, the cp.async copies and grids of few
//     blocks have run on the CPU only.
//
// The check itself must compile what it verifies: the environment variable
// COALESCE_UNVERIFIED_GPU, a comma-separated list of the features' names
// (as the message gives them), lets those through. coalesce-gpu-check sets
// it for its own section; a user may set it to try a feature at their risk.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError for an unverified feature the output's schedule asks
/// for, unless COALESCE_UNVERIFIED_GPU names it.
void check_gpu_verified(const Environment &env);

} // namespace coalesce
