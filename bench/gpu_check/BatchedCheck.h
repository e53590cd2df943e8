#pragma once
// A batch of products on tensor cores (out(b, i, j)), checked on the GPU;
// see BatchedCheck.cpp for what is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// Each product of a batch against the same schedule run on that product
/// alone (the same bits) and against the double reference, per path (warp
/// MMA; warpgroup MMA with cp.async and TMA copies) and operand layout;
/// results go to Report.h.
void check_batched(bench::Precision p);

/// One batch per path at a ragged shape, for compute-sanitizer.
void batched_sanitizer_case();

} // namespace coalesce::gpu_check
