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

#include "dsl/Error.h"

namespace coalesce::reference {

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

} // namespace coalesce::reference
