#pragma once
// A stored K x M (read A(k, i)), checked on the GPU; see MMajorCheck.cpp
// for what is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// GEMM + bias + GELU with A stored K x M, B stored either way, against
/// the same schedule reading A(i, k) from a transposed copy (the same bits)
/// and the double reference, per path and shape; results go to Report.h.
void check_m_major_a(bench::Precision p);

/// A stored K x M at a ragged shape, one per path, for compute-sanitizer.
void m_major_a_sanitizer_case();

} // namespace coalesce::gpu_check
