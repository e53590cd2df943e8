// The user's generator (silu_generator.cpp) on a GPU: out = bf16(silu(x W^T
// + bias) + residual), generated at build time by the installed
// coalesce-aot from the library coalesce_add_generator() built. Fills x, W
// and residual with multiples of 1/256 (exact in bf16), runs the launcher,
// compares 300 sampled outputs and the corners with a double reference
// (tolerance: twice bf16's rounding of the output), prints the time per
// launch. Exit status 1 on a mismatch, 2 when the driver fails.
//
//   silu_linear_gpu          # 4096^3, then a shape ragged in M and N
//   silu_linear_gpu M N K

#include "silu_linear.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

void check(CUresult status, const char *what) {
  if (status == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(status, &name);
  std::fprintf(stderr, "%s failed: %s\n", what, name);
  std::exit(2);
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) : bytes(n) { check(cuMemAlloc(&ptr, bytes), "cuMemAlloc"); }
  ~DeviceBuffer() { cuMemFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  CUdeviceptr ptr = 0;
  size_t bytes;
};

uint16_t to_bf16(float x) { // exact for multiples of 1/256 in (-1, 1)
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return uint16_t(bits >> 16);
}
float from_bf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

std::vector<float> grid_values(size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int> steps(-255, 255);
  std::vector<float> v(n);
  for (float &x : v)
    x = float(steps(engine)) / 256.0f;
  return v;
}

template <typename T> void upload(DeviceBuffer &device, const std::vector<T> &host) {
  check(cuMemcpyHtoD(device.ptr, host.data(), device.bytes), "cuMemcpyHtoD");
}

std::vector<uint16_t> bits_of(const std::vector<float> &v) {
  std::vector<uint16_t> b(v.size());
  std::transform(v.begin(), v.end(), b.begin(), to_bf16);
  return b;
}

bool run_shape(int M, int N, int K) {
  std::vector<float> x = grid_values(size_t(M) * K, 1), W = grid_values(size_t(N) * K, 2),
                     residual = grid_values(size_t(M) * N, 3), bias = grid_values(size_t(N), 4);
  DeviceBuffer x_dev(x.size() * 2), W_dev(W.size() * 2), r_dev(residual.size() * 2), bias_dev(bias.size() * 4),
      out_dev(size_t(M) * N * 2);
  upload(x_dev, bits_of(x));
  upload(W_dev, bits_of(W));
  upload(r_dev, bits_of(residual));
  upload(bias_dev, bias);
  check(cuMemsetD16(out_dev.ptr, 0x7FC0, size_t(M) * N), "cuMemsetD16"); // NaN: unwritten shows
  auto launch = [&] { return silu_linear(W_dev.ptr, bias_dev.ptr, r_dev.ptr, x_dev.ptr, out_dev.ptr, M, N, K, 0); };
  if (launch() != CUDA_SUCCESS) {
    std::fprintf(stderr, "silu_linear: %s\n", silu_linear_error_message());
    return false;
  }
  check(cuCtxSynchronize(), "the kernel");
  std::vector<uint16_t> out(size_t(M) * N);
  check(cuMemcpyDtoH(out.data(), out_dev.ptr, out_dev.bytes), "cuMemcpyDtoH");

  std::vector<std::pair<int, int>> samples = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
  std::mt19937 engine(5);
  for (int s = 0; s < 300; ++s)
    samples.emplace_back(int(engine() % unsigned(M)), int(engine() % unsigned(N)));
  double worst = 0;
  for (auto [i, j] : samples) {
    double sum = bias[j];
    for (int k = 0; k < K; ++k)
      sum += double(x[size_t(i) * K + k]) * double(W[size_t(j) * K + k]);
    double want = sum / (1.0 + std::exp(-sum)) + residual[size_t(i) * N + j];
    double got = from_bf16(out[size_t(i) * N + j]);
    double error = std::fabs(got - want) / std::max(std::fabs(want), 1.0);
    worst = std::max(worst, std::isnan(error) ? INFINITY : error);
  }
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventRecord(start, 0), "cuEventRecord");
  for (int r = 0; r < 20; ++r)
    check(launch(), "silu_linear");
  check(cuEventRecord(stop, 0), "cuEventRecord");
  check(cuEventSynchronize(stop), "the timed kernels");
  float ms = 0;
  check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  ms /= 20;
  const double tolerance = 1.0 / 256;
  bool ok = worst <= tolerance;
  std::printf("%dx%dx%d: largest relative error %.3g (tolerance %.3g), %.4f ms per launch (%.0f TFLOP/s) -> %s\n", M,
              N, K, worst, tolerance, ms, 2.0 * M * N * K / (ms * 1e9), ok ? "ok" : "MISMATCH");
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  check(cuInit(0), "cuInit");
  CUdevice device;
  CUcontext context;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  bool ok = true;
  if (argc == 4)
    ok = run_shape(std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]));
  else
    for (const auto &shape : {std::array<int, 3>{4096, 4096, 4096}, {1000, 1048, 1000}, {131, 136, 8}})
      ok &= run_shape(shape[0], shape[1], shape[2]);
  return ok ? 0 : 1;
}
