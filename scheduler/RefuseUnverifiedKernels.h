#pragma once
// GPU kernels the compiler builds but coalesce-gpu-check has not yet run on
// a GPU, listed in one place: refused on GPU targets (the CPU runs them,
// checked against its references), unless COALESCE_ALLOW_UNVERIFIED=1,
// which the GPU check sets for the cases that verify them. A form leaves
// this list once the GPU check has passed it on the H200.

#include "scheduler/Environment.h"

namespace coalesce {

/// A UserError naming the Func, the form and the opt-in for each form not
/// yet run on a GPU: an MMA tile whose rows run along j (swap-AB).
void refuse_unverified_gpu_kernels(const Environment &env);

} // namespace coalesce
