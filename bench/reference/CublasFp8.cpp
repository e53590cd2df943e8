// cuBLASLt's FP8 GEMM; see CublasFp8.h.

#include "bench/reference/CublasFp8.h"

#include "bench/reference/CublasCheck.h"

#include "dsl/Error.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

namespace coalesce::reference {

namespace {

using detail::check;

constexpr size_t kWorkspaceBytes = 32u << 20;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, d = nullptr; // cuBLASLt's A, B and D
  cublasLtMatmulAlgo_t algo{};
};

// The handle, workspace and plans, created on first use, never destroyed
// (as CublasReference.cpp's state).
struct State {
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  std::mutex mutex;
  std::map<std::tuple<Fp8Scales, bool, int, int, int>, Plan> plans;
  State() {
    check(cublasLtCreate(&lt), "cublasLtCreate");
    if (cudaMalloc(&workspace, kWorkspaceBytes) != cudaSuccess)
      user_error("cudaMalloc of the 32 MiB cuBLASLt workspace failed");
  }
};

State &state() {
  static State *s = new State();
  return *s;
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T &value, const char *what) {
  check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value), what);
}

Plan make_plan(State &s, Fp8Scales scales, bool fast, int M, int N, int K, const float *a_scale, const float *w_scale) {
  Plan p;
  check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "cublasLtMatmulDescSetAttribute(TRANSA)");
  set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "cublasLtMatmulDescSetAttribute(TRANSB)");
  set(p.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(fast ? 1 : 0), "cublasLtMatmulDescSetAttribute(FAST_ACCUM)");
  // cuBLASLt's A is W (its rows: N of them), its B is A (M columns).
  set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, w_scale, "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale, "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  if (scales == Fp8Scales::Row) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "cublasLtMatmulDescSetAttribute(A_SCALE_MODE)");
    set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "cublasLtMatmulDescSetAttribute(B_SCALE_MODE)");
  }
  check(cublasLtMatrixLayoutCreate(&p.w, CUDA_R_8F_E4M3, K, N, K), "cublasLtMatrixLayoutCreate(W, K-major)");
  check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, K, M, K), "cublasLtMatrixLayoutCreate(A, K-major)");
  check(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, N, M, N), "cublasLtMatrixLayoutCreate(out^T, bf16)");
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof workspace),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s.lt, p.desc, p.w, p.a, p.d, p.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
    check(st, "cublasLtMatmulAlgoGetHeuristic (FP8)");
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found < 1)
    user_error("cuBLASLt has no e4m3 GEMM with ", fp8_scales_name(scales), "-wise scales",
               fast ? " and fast accumulation" : "", " for M=", M, ", N=", N, ", K=", K);
  p.algo = result.algo;
  return p;
}

} // namespace

void lt_fp8_gemm(Fp8Scales scales, bool fast_accumulation, int M, int N, int K, const void *A, const void *W,
                 const float *a_scale, const float *w_scale, void *out) {
  if (M < 1 || N < 1 || K < 1)
    user_error("reference::lt_fp8_gemm: M, N and K must be >= 1 (got M=", M, ", N=", N, ", K=", K, ")");
  if (!A || !W || !a_scale || !w_scale || !out)
    user_error("reference::lt_fp8_gemm: a matrix or scale pointer is null");
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto key = std::make_tuple(scales, fast_accumulation, M, N, K);
  auto it = s.plans.find(key);
  if (it == s.plans.end())
    it = s.plans.emplace(key, make_plan(s, scales, fast_accumulation, M, N, K, a_scale, w_scale)).first;
  Plan &p = it->second;
  // The scales' pointers may differ between calls.
  set(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, w_scale, "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  set(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale, "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  const float alpha = 1.0f, beta = 0.0f;
  check(cublasLtMatmul(s.lt, p.desc, &alpha, W, p.w, A, p.a, &beta, out, p.d, out, p.d, &p.algo, s.workspace,
                       kWorkspaceBytes, /*stream=*/nullptr),
        "cublasLtMatmul (FP8)");
}

} // namespace coalesce::reference
