// An application using a SwiGLU launcher that coalesce-aot generated ahead
// of time: y = bf16(silu(x Wg^T) * (x Wu^T)), x (M x K), Wg and Wu (N x K,
// nn.Linear's weight layout), all bf16. Generate it with
//
//   coalesce-aot --name=swiglu --epilogue=swiglu --dtype=bf16 --out-dtype=bf16 --output-dir=DIR
//
// and build with CMake's -DCOALESCE_EXAMPLE_EPILOGUE=swiglu. For each shape
// it fills x, Wg and Wu with random bf16 values, runs the launcher, and
// compares a few hundred sampled outputs (the corners among them) with a
// double-precision reference on the CPU: ||y - reference|| / ||reference||
// over the samples within 1/256 (the bf16 output rounds each element by up
// to 2^-9; the f32 sums add a little), else exit status 1. Shapes with K not
// a multiple of 8 take the kernel's in-kernel copies instead of the TMA's.
//
//   example_app            # a set of shapes, square and ragged
//   example_app M N K      # one shape

#include "AppSupport.h"
#include "swiglu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace example_app;

namespace {

const double kTolerance = 1.0 / 256;

/// `count` bf16 values uniform in [-1, 1) (truncated to bf16: exact), as
/// bits and as the values they mean.
void random_bf16(size_t count, unsigned seed, std::vector<uint16_t> &bits, std::vector<double> &values) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  bits.resize(count);
  values.resize(count);
  for (size_t n = 0; n < count; ++n) {
    float f = uniform(engine);
    uint32_t wide;
    std::memcpy(&wide, &f, 4);
    bits[n] = uint16_t(wide >> 16);
    values[n] = float_of_bf16(bits[n]);
  }
}

CUresult launch(CUdeviceptr x, CUdeviceptr Wg, CUdeviceptr Wu, CUdeviceptr y, int M, int N, int K,
                CUdeviceptr workspace, CUstream stream) {
#if defined(SWIGLU_TAKES_WORKSPACE)
  return swiglu(x, Wg, Wu, y, M, N, K, workspace, stream);
#else
  (void)workspace;
  return swiglu(x, Wg, Wu, y, M, N, K, stream);
#endif
}

/// Runs one shape; returns true if the samples match.
bool run_shape(int M, int N, int K, CUstream stream) {
  std::vector<uint16_t> x_bits, g_bits, u_bits;
  std::vector<double> x, Wg, Wu;
  random_bf16(size_t(M) * K, 1, x_bits, x);
  random_bf16(size_t(N) * K, 2, g_bits, Wg);
  random_bf16(size_t(N) * K, 3, u_bits, Wu);
  DeviceBuffer x_dev(x_bits.size() * 2), g_dev(g_bits.size() * 2), u_dev(u_bits.size() * 2), y_dev(size_t(M) * N * 2);
  x_dev.upload(x_bits.data(), x_bits.size() * 2);
  g_dev.upload(g_bits.data(), g_bits.size() * 2);
  u_dev.upload(u_bits.data(), u_bits.size() * 2);
  check(cuMemsetD16(y_dev.ptr, 0x7FC0, size_t(M) * N), "cuMemsetD16"); // NaN: an unwritten element shows
  size_t workspace_bytes = 0;
#if defined(SWIGLU_TAKES_WORKSPACE)
  workspace_bytes = swiglu_workspace_bytes(M, N, K);
#endif
  DeviceBuffer workspace(std::max<size_t>(workspace_bytes, 1));
  check(cuMemsetD8(workspace.ptr, 0, workspace.bytes), "cuMemsetD8");
  auto run = [&] { return launch(x_dev.ptr, g_dev.ptr, u_dev.ptr, y_dev.ptr, M, N, K, workspace.ptr, stream); };
  if (run() != CUDA_SUCCESS) {
    std::fprintf(stderr, "swiglu: %s\n", swiglu_error_message());
    return false;
  }
  check(cuStreamSynchronize(stream), "the kernel");
  std::vector<uint16_t> y(size_t(M) * N);
  check(cuMemcpyDtoH(y.data(), y_dev.ptr, y.size() * 2), "cuMemcpyDtoH");

  std::vector<std::pair<int, int>> samples = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
  std::mt19937 pick(4);
  for (int s = 0; s < 300; ++s)
    samples.emplace_back(int(pick() % unsigned(M)), int(pick() % unsigned(N)));
  double error_norm = 0, reference_norm = 0;
  int shown = 0;
  for (auto [i, j] : samples) {
    double gate = 0, up = 0;
    for (int k = 0; k < K; ++k) {
      gate += x[size_t(i) * K + k] * Wg[size_t(j) * K + k];
      up += x[size_t(i) * K + k] * Wu[size_t(j) * K + k];
    }
    double want = gate / (1.0 + std::exp(-gate)) * up, got = float_of_bf16(y[size_t(i) * N + j]);
    error_norm += (got - want) * (got - want);
    reference_norm += want * want;
    // The check is the norm; the first few elements far off are shown.
    if (!(std::fabs(got - want) <= 1.0 / 32 * std::max(std::fabs(want), 1.0)) && shown++ < 5)
      std::printf("  y[%d][%d] = %.7g, want %.7g\n", i, j, got, want);
  }
  double norm_error = std::sqrt(error_norm / std::max(reference_norm, 1e-30));
  bool ok = norm_error <= kTolerance; // also false for NaN

  // Two GEMMs of 2 M N K flops each.
  double per_launch_ms = ms_per_launch(run, stream, "swiglu"), tflops = 4.0 * M * N * K / (per_launch_ms * 1e-3) / 1e12;
  std::printf("M=%-5d N=%-5d K=%-5d %3zu samples, rel error %.2e, %8.4f ms, %6.2f TFLOP/s  %s\n", M, N, K,
              samples.size(), norm_error, per_launch_ms, tflops, ok ? "ok" : "MISMATCH");
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  // Ragged shapes, K = 131 (no 16-byte rows: the in-kernel copies), K = 1
  // and K = 3, and a Llama-sized MLP.
  std::vector<std::vector<int>> shapes = {{1024, 1024, 1024}, {127, 129, 131}, {1, 1, 1},          {131, 136, 272},
                                          {67, 45, 1},        {67, 45, 3},     {4096, 4096, 4096}, {4096, 11008, 4096}};
  if (argc == 4) {
    shapes = {{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])}};
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [M N K]\n", argv[0]);
    return 2;
  }
  const OpenDevice gpu = open_device();
  std::printf("device: %s; SwiGLU, bf16 x, Wg, Wu (N x K) and y\n", gpu.name.c_str());
  if (swiglu_load() != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s\n", swiglu_error_message());
    return 2;
  }
  CUresult rejected = launch(0, 0, 0, 0, 1, 1, 1, 0, nullptr);
  std::printf("a bad call returns %d: %s\n", int(rejected), swiglu_error_message());
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
