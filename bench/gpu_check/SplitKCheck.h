#pragma once
// Reductions split across blocks (split_k) checked on the GPU; see
// SplitKCheck.cpp for what is compared with what.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// The five split-K shapes with the default schedule of precision p (fp32:
/// FFMA; bf16, f16, tf32: tensor cores), both combine modes, and the K = 1 /
/// K = 3 pair; results go to Report.h.
/// The five split-K shapes (without `full`: the first and the last) in both
/// combine modes, and the K = 1 / K = 3 pair.
void check_split_k(bench::Precision p, bool full);

/// One deterministic and one atomic split-K run at a ragged shape on buffers
/// of exactly the right size, for compute-sanitizer.
void split_k_sanitizer_case();

} // namespace coalesce::gpu_check
