// The reference bias + GELU epilogue as a separate elementwise kernel (the
// second half of the unfused "chain"), compiled by nvcc. Exact erf GELU, no
// fast-math: this is the accuracy reference as well as the timing baseline.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace coalesce::reference::detail {
namespace {

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678f)); }

/// One float4 of a row per step; N % 4 == 0, so a float4 never straddles rows
/// and the matching four bias values are one aligned float4 too.
__global__ void bias_gelu_vec4(int64_t total4, int n4, const float4 *c, const float4 *__restrict__ bias,
                               float4 *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total4; i += int64_t(gridDim.x) * blockDim.x) {
    float4 v = c[i];
    const float4 b = __ldg(&bias[i % n4]);
    v.x = gelu_erf(v.x + b.x);
    v.y = gelu_erf(v.y + b.y);
    v.z = gelu_erf(v.z + b.z);
    v.w = gelu_erf(v.w + b.w);
    out[i] = v;
  }
}

/// Any N, any alignment.
__global__ void bias_gelu_scalar(int64_t total, int n, const float *c, const float *__restrict__ bias,
                                 float *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = gelu_erf(c[i] + __ldg(&bias[i % n]));
}

// The 16-bit chain (bf16 or f16 C and out, f32 bias): widened to f32, the
// same arithmetic as above, rounded once (to nearest even) on the store.
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T narrow(float v);
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half narrow<__half>(float v) { return __float2half_rn(v); }

/// Eight elements (16 bytes) per step; N % 8 == 0, so a step never straddles
/// rows and its bias is two aligned float4.
template <typename T>
__global__ void bias_gelu_narrow_vec8(int64_t total8, int n8, const uint4 *c, const float4 *__restrict__ bias,
                                      uint4 *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total8; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 packed = c[i];
    const T *v = reinterpret_cast<const T *>(&packed);
    const int64_t b8 = i % n8;
    const float4 b0 = __ldg(&bias[2 * b8]), b1 = __ldg(&bias[2 * b8 + 1]);
    const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
    uint4 result;
    T *r = reinterpret_cast<T *>(&result);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      r[e] = narrow<T>(gelu_erf(widen(v[e]) + b[e]));
    out[i] = result;
  }
}

template <typename T>
__global__ void bias_gelu_narrow_scalar(int64_t total, int n, const T *c, const float *__restrict__ bias, T *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = narrow<T>(gelu_erf(widen(c[i]) + __ldg(&bias[i % n])));
}

unsigned grid_for(int64_t items, int threads) {
  // Enough blocks to cover the data; capped (grid-stride beyond that).
  const int64_t blocks = (items + threads - 1) / threads;
  return unsigned(blocks < (int64_t(1) << 20) ? (blocks > 0 ? blocks : 1) : (int64_t(1) << 20));
}

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

} // namespace

/// Queues the kernel on the legacy default stream; returns the launch status.
/// out may equal c (c and out are not __restrict__): each element is read and
/// written by the same thread in the same step.
cudaError_t launch_bias_gelu(int M, int N, const float *c, const float *bias, float *out) {
  constexpr int kThreads = 256;
  const int64_t total = int64_t(M) * N;
  if (N % 4 == 0 && aligned16(c) && aligned16(bias) && aligned16(out)) {
    const int64_t total4 = total / 4;
    bias_gelu_vec4<<<grid_for(total4, kThreads), kThreads>>>(total4, N / 4, reinterpret_cast<const float4 *>(c),
                                                              reinterpret_cast<const float4 *>(bias),
                                                              reinterpret_cast<float4 *>(out));
  } else {
    bias_gelu_scalar<<<grid_for(total, kThreads), kThreads>>>(total, N, c, bias, out);
  }
  return cudaGetLastError();
}

namespace {
template <typename T> cudaError_t launch_narrow(int M, int N, const void *c, const float *bias, void *out) {
  constexpr int kThreads = 256;
  const int64_t total = int64_t(M) * N;
  if (N % 8 == 0 && aligned16(c) && aligned16(bias) && aligned16(out)) {
    const int64_t total8 = total / 8;
    bias_gelu_narrow_vec8<T><<<grid_for(total8, kThreads), kThreads>>>(
        total8, N / 8, static_cast<const uint4 *>(c), reinterpret_cast<const float4 *>(bias), static_cast<uint4 *>(out));
  } else {
    bias_gelu_narrow_scalar<T><<<grid_for(total, kThreads), kThreads>>>(total, N, static_cast<const T *>(c), bias,
                                                                         static_cast<T *>(out));
  }
  return cudaGetLastError();
}
} // namespace

/// bf16 / f16 C and out, f32 bias; as launch_bias_gelu otherwise.
cudaError_t launch_bias_gelu_bf16(int M, int N, const void *c, const float *bias, void *out) {
  return launch_narrow<__nv_bfloat16>(M, N, c, bias, out);
}
cudaError_t launch_bias_gelu_f16(int M, int N, const void *c, const float *bias, void *out) {
  return launch_narrow<__half>(M, N, c, bias, out);
}

namespace {

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

/// out = silu(g) * u, eight 16-bit elements per step (16-byte vectors).
template <typename T>
__global__ void silu_mul_vec8(int64_t total8, const uint4 *g, const uint4 *u, uint4 *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total8; i += int64_t(gridDim.x) * blockDim.x) {
    uint4 gv = g[i], uv = u[i], result;
    const T *a = reinterpret_cast<const T *>(&gv), *b = reinterpret_cast<const T *>(&uv);
    T *r = reinterpret_cast<T *>(&result);
    for (int e = 0; e < 8; ++e)
      r[e] = narrow<T>(silu(widen(a[e])) * widen(b[e]));
    out[i] = result;
  }
}

template <typename T> __global__ void silu_mul_scalar(int64_t total, const T *g, const T *u, T *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = narrow<T>(silu(widen(g[i])) * widen(u[i]));
}

template <typename T> cudaError_t launch_silu_mul(int64_t total, const void *g, const void *u, void *out) {
  constexpr int kThreads = 256;
  if (total % 8 == 0 && aligned16(g) && aligned16(u) && aligned16(out))
    silu_mul_vec8<T><<<grid_for(total / 8, kThreads), kThreads>>>(total / 8, static_cast<const uint4 *>(g),
                                                                    static_cast<const uint4 *>(u),
                                                                    static_cast<uint4 *>(out));
  else
    silu_mul_scalar<T><<<grid_for(total, kThreads), kThreads>>>(total, static_cast<const T *>(g),
                                                               static_cast<const T *>(u), static_cast<T *>(out));
  return cudaGetLastError();
}

} // namespace

/// out = silu(g) * u over `total` bf16 / f16 elements, in f32 (exact exp),
/// rounded once; SwiGLU's activation after two separate GEMMs.
cudaError_t launch_silu_mul_bf16(int64_t total, const void *g, const void *u, void *out) {
  return launch_silu_mul<__nv_bfloat16>(total, g, u, out);
}
cudaError_t launch_silu_mul_f16(int64_t total, const void *g, const void *u, void *out) {
  return launch_silu_mul<__half>(total, g, u, out);
}

} // namespace coalesce::reference::detail
