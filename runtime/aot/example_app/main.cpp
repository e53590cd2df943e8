// An application using a kernel that coalesce-aot generated ahead of time:
// out = gelu(A B + bias), row-major. It needs only the generated
// gemm_bias_gelu.h/.cpp and the CUDA Driver API; see CMakeLists.txt for how
// to generate, build and run it. COALESCE_EXAMPLE_DTYPE (set by CMake) says
// what the launcher was generated for: f32 (A, B and out f32), tf32 (the
// same buffers, multiplied on tf32 tensor cores), bf16 or f16 (A, B and out
// of that type, on tensor cores).
//
// For each shape it fills A, B and bias with random numbers (A and B
// multiples of 1/256 in (-1, 1), which every input type holds exactly), runs the
// launcher, and compares a few hundred sampled outputs (the corners among
// them) with a double-precision reference on the CPU. It prints the largest
// relative error, |got - want| / max(|want|, 1), and the time per launch, and
// exits with status 1 if any sample is off by more than the tolerance of
// the output type (1e-3 for f32; twice the rounding of a 16-bit output).
//
//   example_app            # a set of shapes, square and ragged
//   example_app M N K      # one shape

#include "AppSupport.h"
#include "gemm_bias_gelu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cstdint>
#include <cstring>

using namespace example_app;

namespace {

#if defined(COALESCE_EXAMPLE_DTYPE_BF16) || defined(COALESCE_EXAMPLE_DTYPE_F16)
using Element = uint16_t; // the bits of a bf16 or f16 value
#else
using Element = float;
#endif

#if defined(COALESCE_EXAMPLE_DTYPE_BF16)
const char *const kTypeName = "bf16 A, B and out (tensor cores)";
const double kTolerance = 1.0 / 256; // twice bf16's rounding of the output
const unsigned short kNaN = 0x7FC0;
#elif defined(COALESCE_EXAMPLE_DTYPE_F16)
const char *const kTypeName = "f16 A, B and out (tensor cores)";
const double kTolerance = 1.0 / 1024; // twice f16's rounding of the output
const unsigned short kNaN = 0x7E00;
#elif defined(COALESCE_EXAMPLE_DTYPE_TF32)
const char *const kTypeName = "f32 A, B and out on tf32 tensor cores";
const double kTolerance = 1e-3;
#else
const char *const kTypeName = "f32 A, B and out";
const double kTolerance = 1e-3;
#endif

#if defined(COALESCE_EXAMPLE_DTYPE_BF16) || defined(COALESCE_EXAMPLE_DTYPE_F16)
uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}
float float_of(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}
#endif

/// The element holding `x` exactly (x is 0 or a multiple of 1/256 in (-1, 1):
/// at most 8 significant bits, exponent at least -8, so no rounding).
Element to_element(float x) {
#if defined(COALESCE_EXAMPLE_DTYPE_BF16)
  return static_cast<Element>(bits_of(x) >> 16);
#elif defined(COALESCE_EXAMPLE_DTYPE_F16)
  uint32_t bits = bits_of(x);
  uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7FFFFFFFu) == 0)
    return static_cast<Element>(sign);
  uint32_t exponent = ((bits >> 23) & 0xFF) - 127 + 15, mantissa = (bits >> 13) & 0x3FF;
  return static_cast<Element>(sign | (exponent << 10) | mantissa);
#else
  return x;
#endif
}

/// An output element widened to float (f16 subnormals and NaN included).
float from_element(Element e) {
#if defined(COALESCE_EXAMPLE_DTYPE_BF16)
  return float_of(uint32_t(e) << 16);
#elif defined(COALESCE_EXAMPLE_DTYPE_F16)
  uint32_t sign = (uint32_t(e) & 0x8000u) << 16, exponent = (e >> 10) & 0x1F, mantissa = e & 0x3FF;
  if (exponent == 0x1F)
    return mantissa ? NAN : float_of(sign | 0x7F800000u);
  if (exponent == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(float(mantissa), -24);
  return float_of(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
#else
  return e;
#endif
}

/// Multiples of 1/256 in (-1, 1): exact in f32, tf32, bf16 and f16.
std::vector<float> random_grid(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> steps(-255, 255);
  std::vector<float> values(count);
  for (float &value : values)
    value = float(steps(engine)) / 256.0f;
  return values;
}

std::vector<Element> to_elements(const std::vector<float> &values) {
  std::vector<Element> elements(values.size());
  for (size_t n = 0; n < values.size(); ++n)
    elements[n] = to_element(values[n]);
  return elements;
}

std::vector<float> random_floats(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(engine);
  return values;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

unsigned short kNaN16() {
#if defined(COALESCE_EXAMPLE_DTYPE_BF16) || defined(COALESCE_EXAMPLE_DTYPE_F16)
  return kNaN;
#else
  return 0;
#endif
}

/// Runs one shape; returns true if every sample matches.
bool run_shape(int M, int N, int K, CUstream stream) {
  std::vector<float> a = random_grid(size_t(M) * K, 1), b = random_grid(size_t(K) * N, 2),
                     bias = random_floats(N, 3);
  std::vector<Element> a_elements = to_elements(a), b_elements = to_elements(b), out_elements(size_t(M) * N);
  DeviceBuffer a_dev(a.size() * sizeof(Element)), b_dev(b.size() * sizeof(Element)),
      bias_dev(bias.size() * sizeof(float)), out_dev(out_elements.size() * sizeof(Element));
  check(cuMemcpyHtoD(a_dev.ptr, a_elements.data(), a_dev.bytes), "cuMemcpyHtoD");
  check(cuMemcpyHtoD(b_dev.ptr, b_elements.data(), b_dev.bytes), "cuMemcpyHtoD");
  check(cuMemcpyHtoD(bias_dev.ptr, bias.data(), bias_dev.bytes), "cuMemcpyHtoD");
  // NaN everywhere, so that an element the kernel never wrote shows.
  if (sizeof(Element) == 2)
    check(cuMemsetD16(out_dev.ptr, kNaN16(), out_elements.size()), "cuMemsetD16");
  else
    check(cuMemsetD32(out_dev.ptr, 0x7fc00000u, out_elements.size()), "cuMemsetD32");

#if defined(GEMM_BIAS_GELU_TAKES_WORKSPACE)
  // A launcher that takes a workspace (--split-k, or the TMA's padded
  // copies: tf32 on the warpgroup MMA) says so in its header. The caller's,
  // zeroed once, as large as the launcher says; every launch leaves it
  // zeroed (split_k's) or rewrites it whole before reading it (the copies).
  DeviceBuffer workspace(std::max<size_t>(gemm_bias_gelu_workspace_bytes(M, N, K), 1));
  check(cuMemsetD8(workspace.ptr, 0, workspace.bytes), "cuMemsetD8");
  auto launch = [&] {
    return gemm_bias_gelu(a_dev.ptr, b_dev.ptr, bias_dev.ptr, out_dev.ptr, M, N, K, workspace.ptr, stream);
  };
#else
  auto launch = [&] { return gemm_bias_gelu(a_dev.ptr, b_dev.ptr, bias_dev.ptr, out_dev.ptr, M, N, K, stream); };
#endif
  CUresult status = launch();
  if (status != CUDA_SUCCESS) {
    std::fprintf(stderr, "gemm_bias_gelu: %s\n", gemm_bias_gelu_error_message());
    return false;
  }
  check(cuStreamSynchronize(stream), "the kernel");
  check(cuMemcpyDtoH(out_elements.data(), out_dev.ptr, out_dev.bytes), "cuMemcpyDtoH");

  // Samples: the four corners, then random points.
  std::vector<std::pair<int, int>> samples = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
  std::mt19937 engine(4);
  for (int s = 0; s < 300; ++s)
    samples.emplace_back(int(engine() % unsigned(M)), int(engine() % unsigned(N)));
  double max_error = 0;
  int bad = 0;
  for (auto [i, j] : samples) {
    double sum = 0;
    for (int k = 0; k < K; ++k)
      sum += double(a[size_t(i) * K + k]) * double(b[size_t(k) * N + j]);
    double want = gelu(sum + bias[j]);
    double got = from_element(out_elements[size_t(i) * N + j]);
    double error = std::fabs(got - want) / std::max(std::fabs(want), 1.0);
    if (!(error <= kTolerance)) { // also catches NaN
      if (++bad <= 5)
        std::printf("  out[%d][%d] = %.7g, want %.7g\n", i, j, got, want);
      error = std::isnan(error) ? INFINITY : error;
    }
    max_error = std::max(max_error, error);
  }

  // Time: the mean of 20 launches after a warm-up.
  double per_launch_ms = ms_per_launch(launch, stream, "gemm_bias_gelu");
  double tflops = 2.0 * M * N * K / (per_launch_ms * 1e-3) / 1e12;

  std::printf("M=%-5d N=%-5d K=%-5d %3zu samples, max rel error %.2e, %8.4f ms, %6.2f TFLOP/s  %s\n",
              M, N, K, samples.size(), max_error, per_launch_ms, tflops, bad ? "MISMATCH" : "ok");
  return bad == 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::vector<int>> shapes = {
      {1024, 1024, 1024}, {127, 129, 131}, {1, 1, 1}, {4096, 4096, 4096}, {2048, 768, 3072}};
  if (argc == 4) {
    shapes = {{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])}};
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [M N K]\n", argv[0]);
    return 2;
  }

  const OpenDevice gpu = open_device();
  std::printf("device: %s; %s\n", gpu.name.c_str(), kTypeName);

  // Load (JIT-compile) the module up front, and show how errors read.
  if (gemm_bias_gelu_load() != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s\n", gemm_bias_gelu_error_message());
    return 2;
  }
#if defined(GEMM_BIAS_GELU_TAKES_WORKSPACE)
  CUresult rejected = gemm_bias_gelu(0, 0, 0, 0, 0, 1, 1, 0, nullptr);
#else
  CUresult rejected = gemm_bias_gelu(0, 0, 0, 0, 0, 1, 1, nullptr);
#endif
  std::printf("a bad call returns %d: %s\n", int(rejected), gemm_bias_gelu_error_message());
  if (rejected != CUDA_ERROR_INVALID_VALUE)
    return 1;

  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  bool all_ok = true;
  for (const std::vector<int> &shape : shapes)
    all_ok &= run_shape(shape[0], shape[1], shape[2], stream);
  cuStreamDestroy(stream);
  cuDevicePrimaryCtxRelease(gpu.device);
  std::printf("%s\n", all_ok ? "all shapes match the reference" : "MISMATCH");
  return all_ok ? 0 : 1;
}
