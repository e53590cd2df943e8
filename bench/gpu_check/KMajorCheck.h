#pragma once

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// The tensor-core schedules on a B stored N x K, as nn.Linear keeps its
/// weight (acc(i, j) += A(i, k) * W(j, k)): the warp MMA (ldmatrix without
/// .trans), and on sm_90a the warpgroup MMA with the TMA's copies, with
/// cp.async copies and with padded copies (K-major descriptors for B; tf32
/// without the transposing copy), at ragged shapes and the K = 1 / K = 3
/// pair, against the double reference on every row; and swap-AB
/// (MmaTiling::swap_ab, W's rows the instruction's M) on the 16-bit ones,
/// at decode-like M too.
void check_k_major_b(bench::Precision p);
/// One run of each of those kernels (bf16; tf32's padded copies) at one
/// ragged shape, for compute-sanitizer.
void k_major_b_sanitizer_case();

} // namespace coalesce::gpu_check
