// cuBLAS / cuBLASLt reference calls; see CublasReference.h.
//
// Row-major via the transpose trick: a row-major M x N matrix is, byte for
// byte, a column-major N x M matrix (its transpose). So C = A B (row-major)
// is computed as C^T = B^T A^T in column-major with m = N, n = M, k = K and
// leading dimensions N (B, C) and K (A). For cuBLASLt the bias then runs along
// the rows of the column-major D (length N), i.e. per row-major column j, as
// required; this is also how PyTorch calls the same epilogue.

#include "bench/reference/CublasReference.h"

#include "bench/reference/CublasCheck.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace coalesce::reference {
namespace detail {
// epilogue_kernels.cu
cudaError_t launch_bias_gelu(int M, int N, const float *c, const float *bias, float *out);
cudaError_t launch_bias_gelu_bf16(int M, int N, const void *c, const float *bias, void *out);
cudaError_t launch_bias_gelu_f16(int M, int N, const void *c, const float *bias, void *out);
cudaError_t launch_silu_mul_bf16(int64_t total, const void *g, const void *u, void *out);
cudaError_t launch_silu_mul_f16(int64_t total, const void *g, const void *u, void *out);
} // namespace detail


namespace {

using detail::check;

void check_args(const char *fn, int M, int N, int K, std::initializer_list<const void *> pointers) {
  if (M < 1 || N < 1 || K < 1)
    user_error("reference::", fn, ": M, N and K must be >= 1 (got M=", M, ", N=", N, ", K=", K, ")");
  for (const void *p : pointers)
    if (!p)
      user_error("reference::", fn, ": a matrix or bias pointer is null");
}

/// The largest power-of-two alignment of a pointer, capped at 256 bytes
/// (cuBLASLt's default assumption).
uint32_t alignment(const void *p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && (a & (align - 1)))
    align /= 2;
  return align;
}

constexpr size_t kLtWorkspaceBytes = 32u << 20;

/// The cuBLAS element type of p's inputs, and of its output.
cudaDataType_t input_type(Precision p) {
  return p == Precision::BF16 ? CUDA_R_16BF : p == Precision::F16 ? CUDA_R_16F : CUDA_R_32F;
}
cudaDataType_t output_type(Precision p) { return input_type(p); }

/// f32 accumulation throughout; TF32 lets the tensor cores round inputs.
cublasComputeType_t compute_type(Precision p) {
  return p == Precision::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/// One cuBLASLt problem, planned once: descriptors plus the algorithm the
/// heuristic picked, so timed calls do no host-side planning.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr; // in cuBLASLt's (column-major) terms
  cublasLtMatmulAlgo_t algo{};
};

/// The process's cuBLAS state, created on first use and never destroyed
/// (destroying it at exit would race the CUDA runtime's own teardown).
struct State {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  std::mutex mutex; // guards plans
  std::map<std::tuple<Precision, int, int, int, uint32_t, uint32_t, uint32_t, uint32_t, bool>, LtPlan> plans;

  State() {
    check(cublasCreate(&blas), "cublasCreate");
    // No TF32 (nor any reduced precision): CUBLAS_DEFAULT_MATH with cublasSgemm
    // is true FP32 SGEMM (NVIDIA_TF32_OVERRIDE can only disable TF32).
    check(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode(CUBLAS_DEFAULT_MATH)");
    check(cublasLtCreate(&lt), "cublasLtCreate");
    check(cudaMalloc(&workspace, kLtWorkspaceBytes), "cudaMalloc of the 32 MiB cuBLASLt workspace");
  }
};

State &state() {
  static State *s = new State(); // if it throws, the next call retries
  return *s;
}

/// Builds the plan for D(N x M, col-major) = gelu(B^T(N x K) A^T(K x M) + bias);
/// with b_nk, B is stored N x K (col-major K x N, transposed by cuBLASLt).
LtPlan make_plan(State &s, Precision precision, int M, int N, int K, const void *A, const void *B, const void *bias,
                 void *out, bool b_nk) {
  LtPlan p;
  // Scale type f32 (alpha and beta are floats) for every precision.
  check(cublasLtMatmulDescCreate(&p.desc, compute_type(precision), CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t no_trans = CUBLAS_OP_N;
  const cublasOperation_t trans_b = b_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_b, sizeof trans_b),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
        "cublasLtMatmulDescSetAttribute(EPILOGUE = GELU_BIAS)");
  // The heuristic reads the bias pointer's value (for its alignment).
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  // The bias is of D's type (cuBLASLt's default for non-integer, non-fp8
  // kernels), set here so that the contract is visible.
  const int32_t bias_type = output_type(precision);
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
        "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  const cudaDataType_t in = input_type(precision), outt = output_type(precision);
  if (b_nk)
    check(cublasLtMatrixLayoutCreate(&p.a, in, K, N, K), "cublasLtMatrixLayoutCreate(B, N x K)");
  else
    check(cublasLtMatrixLayoutCreate(&p.a, in, N, K, N), "cublasLtMatrixLayoutCreate(B^T)");
  check(cublasLtMatrixLayoutCreate(&p.b, in, K, M, K), "cublasLtMatrixLayoutCreate(A^T)");
  check(cublasLtMatrixLayoutCreate(&p.d, outt, N, M, N), "cublasLtMatrixLayoutCreate(out^T)");

  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kLtWorkspaceBytes;
  const uint32_t align_a = alignment(B), align_b = alignment(A), align_d = alignment(out);
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspace, sizeof workspace);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                              sizeof align_a);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                              sizeof align_b);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                                              sizeof align_d);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                                              sizeof align_d);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(s.lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    found = 0; // reported below with the problem's details
  else
    check(st, "cublasLtMatmulAlgoGetHeuristic (GELU_BIAS)");
  if (found < 1)
    user_error("cuBLASLt has no ", precision_name(precision), " GELU_BIAS algorithm for M=", M, ", N=", N, ", K=", K,
               " with these pointer alignments (A ", align_b, ", B ", align_a, ", out ", align_d, " bytes)");
  p.algo = result.algo;
  return p;
}

} // namespace

void sgemm(int M, int N, int K, const float *A, const float *B, float *C) {
  check_args("sgemm", M, N, K, {A, B, C});
  State &s = state();
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major C^T(N x M) = B^T(N x K) * A^T(K x M).
  check(cublasSgemm(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N), "cublasSgemm");
}

void bias_gelu(int M, int N, const float *C, const float *bias, float *out) {
  check_args("bias_gelu", M, N, 1, {C, bias, out});
  check(detail::launch_bias_gelu(M, N, C, bias, out), "launching the bias+GELU kernel");
}

void chain(int M, int N, int K, const float *A, const float *B, const float *bias, float *C_tmp, float *out) {
  check_args("chain", M, N, K, {A, B, bias, C_tmp, out});
  sgemm(M, N, K, A, B, C_tmp);
  bias_gelu(M, N, C_tmp, bias, out);
}

void lt_gelu_bias(int M, int N, int K, const float *A, const float *B, const float *bias, float *out) {
  lt_gelu_bias(Precision::FP32, M, N, K, A, B, bias, out);
}

void gemm(Precision p, int M, int N, int K, const void *A, const void *B, void *C, bool f32_output, bool b_nk) {
  check_args("gemm", M, N, K, {A, B, C});
  State &s = state();
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major C^T(N x M) = B^T(N x K) * A^T(K x M), as in sgemm; B stored
  // N x K is a column-major K x N matrix, transposed.
  const cublasOperation_t op_b = b_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = b_nk ? K : N;
  if (p == Precision::FP32) {
    check(cublasSgemm(s.blas, op_b, CUBLAS_OP_N, N, M, K, &alpha, static_cast<const float *>(B), ldb,
                      static_cast<const float *>(A), K, &beta, static_cast<float *>(C), N),
          "cublasSgemm");
    return;
  }
  const cudaDataType_t in = input_type(p), out = f32_output ? CUDA_R_32F : output_type(p);
  check(cublasGemmEx(s.blas, op_b, CUBLAS_OP_N, N, M, K, &alpha, B, in, ldb, A, in, K, &beta, C, out, N,
                     compute_type(p), CUBLAS_GEMM_DEFAULT),
        p == Precision::TF32 ? "cublasGemmEx (tf32)" : p == Precision::BF16 ? "cublasGemmEx (bf16)" : "cublasGemmEx (f16)");
}

void gemm_strided_batched(Precision p, int batch, int M, int N, int K, const void *A, int64_t stride_a,
                          const void *B, int64_t stride_b, void *C, bool b_nk) {
  check_args("gemm_strided_batched", M, N, K, {A, B, C});
  if (batch < 1 || (p != Precision::BF16 && p != Precision::F16))
    user_error("reference::gemm_strided_batched: a batch of at least 1 bf16 or f16 products (got ", batch, " of ",
               precision_name(p), ")");
  State &s = state();
  const float alpha = 1.0f, beta = 0.0f;
  // As gemm: column-major C^T(N x M) = B^T * A^T, per product.
  const cublasOperation_t op_b = b_nk ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = b_nk ? K : N;
  const cudaDataType_t type = input_type(p);
  check(cublasGemmStridedBatchedEx(s.blas, op_b, CUBLAS_OP_N, N, M, K, &alpha, B, type, ldb, stride_b, A, type, K,
                                   stride_a, &beta, C, type, N, int64_t(M) * N, batch, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

void bias_gelu(Precision p, int M, int N, const void *C, const float *bias, void *out) {
  check_args("bias_gelu", M, N, 1, {C, bias, out});
  switch (p) {
  case Precision::FP32:
  case Precision::TF32:
    bias_gelu(M, N, static_cast<const float *>(C), bias, static_cast<float *>(out));
    return;
  case Precision::BF16:
    check(detail::launch_bias_gelu_bf16(M, N, C, bias, out), "launching the bf16 bias+GELU kernel");
    return;
  case Precision::F16:
    check(detail::launch_bias_gelu_f16(M, N, C, bias, out), "launching the f16 bias+GELU kernel");
    return;
  }
}

void silu_mul(Precision p, int M, int N, const void *g, const void *u, void *out) {
  check_args("silu_mul", M, N, 1, {g, u, out});
  const int64_t total = int64_t(M) * N;
  switch (p) {
  case Precision::BF16:
    check(detail::launch_silu_mul_bf16(total, g, u, out), "launching the bf16 silu * mul kernel");
    return;
  case Precision::F16:
    check(detail::launch_silu_mul_f16(total, g, u, out), "launching the f16 silu * mul kernel");
    return;
  case Precision::FP32:
  case Precision::TF32:
    user_error("reference::silu_mul: ", precision_name(p), " is not built (bf16 and f16 only)");
  }
}

void chain(Precision p, int M, int N, int K, const void *A, const void *B, const float *bias, void *C_tmp,
           void *out, bool b_nk) {
  check_args("chain", M, N, K, {A, B, bias, C_tmp, out});
  gemm(p, M, N, K, A, B, C_tmp, /*f32_output=*/false, b_nk);
  bias_gelu(p, M, N, C_tmp, bias, out);
}

void lt_gelu_bias(Precision precision, int M, int N, int K, const void *A, const void *B, const void *bias,
                  void *out, bool b_nk) {
  check_args("lt_gelu_bias", M, N, K, {A, B, bias, out});
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto key =
      std::make_tuple(precision, M, N, K, alignment(A), alignment(B), alignment(bias), alignment(out), b_nk);
  auto it = s.plans.find(key);
  if (it == s.plans.end())
    it = s.plans.emplace(key, make_plan(s, precision, M, N, K, A, B, bias, out, b_nk)).first;
  const LtPlan &p = it->second;
  check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  const float alpha = 1.0f, beta = 0.0f;
  // beta = 0, so C is not read; it is given D's pointer and layout.
  check(cublasLtMatmul(s.lt, p.desc, &alpha, B, p.a, A, p.b, &beta, out, p.d, out, p.d, &p.algo, s.workspace,
                       kLtWorkspaceBytes, /*stream=*/nullptr),
        "cublasLtMatmul (GELU_BIAS)");
}

} // namespace coalesce::reference
