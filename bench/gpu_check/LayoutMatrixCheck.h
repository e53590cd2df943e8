#pragma once
// Part of the strided section: every operand layout with every output
// layout (bench/gpu_check/LayoutMatrixGemm.h: A M x K or K x M, B K x N or
// N x K, out dense, rows ldc apart or column-major) on each path the GPU
// has, bf16 (and f32 on FFMA), at a ragged shape, and as a batch of three
// products on the paths that run batches: the dense layouts' bits
// from the same schedule on the GPU, nothing written between an output
// view's rows or columns, no element NaN.

namespace coalesce::gpu_check {

void check_layout_matrix();

/// One combination of each kind at a ragged shape, for compute-sanitizer.
void layout_matrix_sanitizer_case();

} // namespace coalesce::gpu_check
