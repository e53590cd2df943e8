#pragma once
// cuBLASLt's FP8 GEMM, the reference the FP8 benchmark times against
// (bench/fp8): e4m3 A (M x K) and W (N x K), both K-major as cuBLASLt's FP8
// kernels require ("TN"), f32 accumulation, a bf16 output M x N, no
// epilogue. Row-major through the transpose trick of CublasReference.cpp:
// out^T (N x M, column-major) = op_T(W) (N x K) * A^T (K x M).

namespace coalesce::reference {

/// How the products are scaled: one float per matrix (`Tensor`), or one
/// per row of A and one per row of W (`Row`: cuBLASLt's outer-vector
/// scaling, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F).
enum class Fp8Scales { Tensor, Row };
inline const char *fp8_scales_name(Fp8Scales s) { return s == Fp8Scales::Tensor ? "tensor" : "row"; }

/// out(i, j) = bf16(a_scale * w_scale * sum_k A(i, k) W(j, k)) with the
/// scales as `scales` says (device pointers to 1, or M and N, floats).
/// `fast_accumulation`: cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM (partial
/// sums kept in the tensor cores' accumulator, as Coalesce's kernel keeps
/// them; off, cuBLASLt promotes them to f32 along K). Planned once per
/// problem; a UserError names what cuBLASLt refused.
void lt_fp8_gemm(Fp8Scales scales, bool fast_accumulation, int M, int N, int K, const void *A, const void *W,
                 const float *a_scale, const float *w_scale, void *out);

} // namespace coalesce::reference
