#pragma once
// Inputs that are views into larger tensors (Input's strides), checked on
// the GPU; see StridedCheck.cpp for what is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// GEMM + bias + GELU with A and W views (rows lda and ldw apart) against
/// the same schedule on dense copies (the same bits) and the double
/// reference, per path and leading dimension; results go to Report.h.
void check_strided(bench::Precision p);

/// Views at a ragged shape, one per path, for compute-sanitizer (a read
/// past a view's last element is past its buffer's end).
void strided_sanitizer_case();

} // namespace coalesce::gpu_check
