#pragma once
// cuBLAS / cuBLASLt reference implementations of the fused GEMM + bias + GELU
// that Coalesce generates, for the GPU tests and the benchmark (BENCH.md's
// "GEMM", "chain" and "Lt" columns).
//
// Conventions (all functions): row-major FP32 matrices A (M x K), B (K x N),
// bias (N, one value per output column), outputs M x N; every pointer is a
// device pointer already allocated, e.g. DeviceBuffer::as<float>() (the
// driver's primary context is the one the CUDA runtime uses, so cuBLAS sees
// those allocations). Work is queued on the legacy default stream, ordered
// with Coalesce's own launches; call gpu::synchronize() (or time with events)
// to wait. M, N, K must be >= 1. A cuBLAS / CUDA failure throws
// coalesce::UserError naming the call and the status.
//
// Handles, the cuBLASLt workspace (32 MiB) and cuBLASLt plans are created on
// first use and kept for the life of the process, so timed calls pay no setup.
//
// The first four functions are FP32 only; the Precision overloads below take
// the element types of a mixed-precision GEMM (same conventions, pointers of
// the types the precision names).

#include "dsl/Error.h"

namespace coalesce::reference {

/// The element types of a GEMM. Inputs: f32 (FP32, TF32), bf16 or f16;
/// output: f32 for FP32 and TF32, else the input type (what a bf16/f16
/// network layer stores). Accumulation is f32 in every case; TF32 lets the
/// tensor cores round the f32 inputs to tf32 (CUBLAS_COMPUTE_32F_FAST_TF32).
enum class Precision { FP32, TF32, BF16, F16 };

/// "fp32", "tf32", "bf16", "f16".
inline const char *precision_name(Precision p) {
  switch (p) {
  case Precision::FP32:
    return "fp32";
  case Precision::TF32:
    return "tf32";
  case Precision::BF16:
    return "bf16";
  case Precision::F16:
    return "f16";
  }
  return "?";
}
/// Bytes of one element of A and B, and of the output.
inline int input_bytes(Precision p) { return p == Precision::FP32 || p == Precision::TF32 ? 4 : 2; }
inline int output_bytes(Precision p) { return input_bytes(p); }

/// C = A * B in true FP32 (cublasSgemm, CUBLAS_DEFAULT_MATH: no TF32).
void sgemm(int M, int N, int K, const float *A, const float *B, float *C);

/// out[i][j] = gelu(C[i][j] + bias[j]) with the exact erf GELU,
/// gelu(x) = 0.5 x (1 + erff(x / sqrt 2)). One nvcc-compiled elementwise kernel
/// (float4 loads when N % 4 == 0 and the pointers are 16-byte aligned).
/// out may equal C (in place).
void bias_gelu(int M, int N, const float *C, const float *bias, float *out);

/// The unfused chain: sgemm into C_tmp (M x N), then bias_gelu into out.
/// out may equal C_tmp.
void chain(int M, int N, int K, const float *A, const float *B, const float *bias, float *C_tmp, float *out);

/// out = gelu(A * B + bias) in one cuBLASLt matmul with
/// CUBLASLT_EPILOGUE_GELU_BIAS, CUBLAS_COMPUTE_32F (no TF32).
/// NOTE: cuBLASLt's GELU epilogue is the tanh approximation,
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), not the erf form; it
/// differs from erf-GELU by up to about 5e-4 in absolute value, so compare it to
/// an erf reference with a tolerance that allows for that (or use it for
/// timing only). out must not alias A or B.
void lt_gelu_bias(int M, int N, int K, const float *A, const float *B, const float *bias, float *out);

/// C = A * B with A and B in p's input type; C in p's output type, or in f32
/// when `f32_output` (the accurate reference for a bf16/f16 result: one f32
/// accumulation, no rounding to 16 bits). FP32 is cublasSgemm (true FP32);
/// the others cublasGemmEx with CUBLAS_COMPUTE_32F (FAST_TF32 for TF32).
/// With `b_nk`, B is stored N x K (row-major W[N][K], nn.Linear's weight) and
/// C = A * B^T (cuBLAS's transposed operand), in this and the functions below.
void gemm(Precision p, int M, int N, int K, const void *A, const void *B, void *C, bool f32_output = false,
          bool b_nk = false);

/// `batch` products C[b] = A[b] * B[b] (or * B[b]^T with `b_nk`), each as
/// gemm's, the operands `stride_a` and `stride_b` elements apart (0: one
/// operand for the whole batch), C dense (M x N apart):
/// cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F, bf16 or f16 only.
void gemm_strided_batched(Precision p, int batch, int M, int N, int K, const void *A, int64_t stride_a,
                          const void *B, int64_t stride_b, void *C, bool b_nk = false);

/// out[i][j] = gelu(C[i][j] + bias[j]), C and out in p's output type, the
/// arithmetic in f32 (exact erf GELU), rounded once to the output type.
void bias_gelu(Precision p, int M, int N, const void *C, const float *bias, void *out);

/// out[i][j] = silu(g[i][j]) * u[i][j] (silu(x) = x / (1 + exp(-x))), all M x N
/// in p's type (bf16 or f16 only), the arithmetic in f32, rounded once:
/// SwiGLU's activation as a kernel of its own, after two GEMMs.
void silu_mul(Precision p, int M, int N, const void *g, const void *u, void *out);

/// The unfused chain in p's types: gemm into C_tmp (output type), then
/// bias_gelu into out. C_tmp holds M x N output elements; out may equal C_tmp.
void chain(Precision p, int M, int N, int K, const void *A, const void *B, const float *bias, void *C_tmp,
           void *out, bool b_nk = false);

/// out = gelu(A * B + bias) in one cuBLASLt matmul (GELU_BIAS, tanh GELU as
/// above) in p's types. `bias` has N elements of p's OUTPUT type: cuBLASLt's
/// bias type defaults to D's type (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE), and
/// this sets it so explicitly. Throws UserError when cuBLASLt has no
/// algorithm for the problem (message starts "cuBLASLt has no").
void lt_gelu_bias(Precision p, int M, int N, int K, const void *A, const void *B, const void *bias, void *out,
                  bool b_nk = false);

} // namespace coalesce::reference
