// An application using an FP8 launcher that coalesce-aot generated ahead of
// time: out = bf16(gelu(scale_a * scale_b * (A B^T) + bias)), A (M x K) and
// B (N x K, nn.Linear's weight layout) of 8-bit floats, one byte per element.
// COALESCE_EXAMPLE_DTYPE_E4M3 / _E5M2 say which (CMake sets them from
// COALESCE_EXAMPLE_DTYPE), COALESCE_EXAMPLE_SCALES_ROW / _TENSOR how the
// scales were generated (--scales=row: scale_a[M], scale_b[N]; tensor: one
// f32 each). Generate it with
//
//   coalesce-aot --name=gemm_bias_gelu --dtype=e4m3 --b=nk --scales=row
//                --out-dtype=bf16 --bias=true --activation=gelu --output-dir=DIR
//
// For each shape it fills A and B with values every 8-bit format holds
// exactly, runs the launcher, and compares a few hundred sampled outputs (the
// corners among them) with a double-precision reference on the CPU: the
// largest |got - want| / max(|want|, 1), within twice bf16's rounding, or
// exit status 1. Shapes with K not a multiple of 16 take the kernel's
// in-kernel copies instead of the TMA's.
//
//   example_app            # a set of shapes, square and ragged
//   example_app M N K      # one shape

#include "AppSupport.h"
#include "gemm_bias_gelu.h"

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

#if defined(COALESCE_EXAMPLE_DTYPE_E5M2)
const char *const kTypeName = "e5m2";
const int kMantissaBits = 2, kBias = 15;
#else
const char *const kTypeName = "e4m3";
const int kMantissaBits = 3, kBias = 7;
#endif
#if defined(COALESCE_EXAMPLE_SCALES_TENSOR)
const bool kRowScales = false;
#else
const bool kRowScales = true;
#endif
// Over the samples, ||out - reference|| / ||reference||: the bf16 output's
// rounding (2^-9 relative) and the FP8 warpgroup MMA's accumulator, which
// keeps fewer bits than f32 (as cuBLASLt's fast accumulation: 2.1e-3 at
// K = 4096 on the H200), so single elements near a cancelling sum stray
// further; each element within kElementTolerance of max(|reference|, 1).
const double kTolerance = 1.0 / 256;
const double kElementTolerance = 1.0 / 32;

/// Random 8-bit values, each +-(1 + f/4) 2^e with f in 0..3 and e in -4..0,
/// or 0: two mantissa bits, so that e4m3 and e5m2 both hold them exactly.
/// `values` gets what each byte of `bits` means.
void random_fp8(size_t count, unsigned seed, std::vector<uint8_t> &bits, std::vector<double> &values) {
  std::mt19937 engine(seed);
  bits.resize(count);
  values.resize(count);
  for (size_t n = 0; n < count; ++n) {
    unsigned r = engine();
    if (r % 9 == 0) {
      bits[n] = 0, values[n] = 0;
      continue;
    }
    unsigned sign = (r >> 4) & 1, f = (r >> 5) & 3, e = (r >> 7) % 5; // exponent -e
    bits[n] = uint8_t(sign << 7 | unsigned(kBias - int(e)) << kMantissaBits | f << (kMantissaBits - 2));
    values[n] = (sign ? -1.0 : 1.0) * (1 + f / 4.0) * std::ldexp(1.0, -int(e));
  }
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

CUresult launch(CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr scale_a, CUdeviceptr scale_b,
                CUdeviceptr out, int M, int N, int K, CUdeviceptr workspace, CUstream stream) {
#if defined(GEMM_BIAS_GELU_TAKES_WORKSPACE)
  return gemm_bias_gelu(a, b, bias, scale_a, scale_b, out, M, N, K, workspace, stream);
#else
  (void)workspace;
  return gemm_bias_gelu(a, b, bias, scale_a, scale_b, out, M, N, K, stream);
#endif
}

/// Runs one shape; returns true if every sample matches.
bool run_shape(int M, int N, int K, CUstream stream) {
  std::vector<uint8_t> a_bits, b_bits;
  std::vector<double> a, b;
  random_fp8(size_t(M) * K, 1, a_bits, a);
  random_fp8(size_t(N) * K, 2, b_bits, b);
  std::vector<float> bias(N), scale_a(kRowScales ? M : 1), scale_b(kRowScales ? N : 1);
  std::mt19937 engine(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float &value : bias)
    value = uniform(engine);
  for (size_t i = 0; i < scale_a.size(); ++i)
    scale_a[i] = 0.5f + 0.01f * float(i % 7);
  for (size_t j = 0; j < scale_b.size(); ++j)
    scale_b[j] = 2.0f - 0.02f * float(j % 5);

  DeviceBuffer a_dev(a_bits.size()), b_dev(b_bits.size()), bias_dev(bias.size() * 4), scale_a_dev(scale_a.size() * 4),
      scale_b_dev(scale_b.size() * 4), out_dev(size_t(M) * N * 2);
  a_dev.upload(a_bits.data(), a_bits.size());
  b_dev.upload(b_bits.data(), b_bits.size());
  bias_dev.upload(bias.data(), bias.size() * 4);
  scale_a_dev.upload(scale_a.data(), scale_a.size() * 4);
  scale_b_dev.upload(scale_b.data(), scale_b.size() * 4);
  check(cuMemsetD16(out_dev.ptr, 0x7FC0, size_t(M) * N), "cuMemsetD16"); // NaN: an unwritten element shows
  size_t workspace_bytes = 0;
#if defined(GEMM_BIAS_GELU_TAKES_WORKSPACE)
  workspace_bytes = gemm_bias_gelu_workspace_bytes(M, N, K);
#endif
  DeviceBuffer workspace(std::max<size_t>(workspace_bytes, 1));
  check(cuMemsetD8(workspace.ptr, 0, workspace.bytes), "cuMemsetD8");
  auto run = [&] {
    return launch(a_dev.ptr, b_dev.ptr, bias_dev.ptr, scale_a_dev.ptr, scale_b_dev.ptr, out_dev.ptr, M, N, K,
                  workspace.ptr, stream);
  };
  if (run() != CUDA_SUCCESS) {
    std::fprintf(stderr, "gemm_bias_gelu: %s\n", gemm_bias_gelu_error_message());
    return false;
  }
  check(cuStreamSynchronize(stream), "the kernel");
  std::vector<uint16_t> out(size_t(M) * N);
  check(cuMemcpyDtoH(out.data(), out_dev.ptr, out.size() * 2), "cuMemcpyDtoH");

  std::vector<std::pair<int, int>> samples = {{0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}};
  std::mt19937 pick(4);
  for (int s = 0; s < 300; ++s)
    samples.emplace_back(int(pick() % unsigned(M)), int(pick() % unsigned(N)));
  double max_error = 0, error_norm = 0, reference_norm = 0;
  int bad = 0;
  for (auto [i, j] : samples) {
    double sum = 0; // products of these values are exact, and so are their sums
    for (int k = 0; k < K; ++k)
      sum += a[size_t(i) * K + k] * b[size_t(j) * K + k];
    double scaled = sum * scale_a[kRowScales ? i : 0] * scale_b[kRowScales ? j : 0];
    double want = gelu(scaled + bias[j]), got = float_of_bf16(out[size_t(i) * N + j]);
    error_norm += (got - want) * (got - want);
    reference_norm += want * want;
    double error = std::fabs(got - want) / std::max(std::fabs(want), 1.0);
    if (!(error <= kElementTolerance)) { // also catches NaN
      if (++bad <= 5)
        std::printf("  out[%d][%d] = %.7g, want %.7g\n", i, j, got, want);
      error = std::isnan(error) ? INFINITY : error;
    }
    max_error = std::max(max_error, error);
  }
  double norm_error = std::sqrt(error_norm / std::max(reference_norm, 1e-30));
  if (!(norm_error <= kTolerance)) {
    std::printf("  ||out - reference|| / ||reference|| = %.3g over the samples, above %.3g\n", norm_error, kTolerance);
    ++bad;
  }

  double per_launch_ms = ms_per_launch(run, stream, "gemm_bias_gelu"),
         tflops = 2.0 * M * N * K / (per_launch_ms * 1e-3) / 1e12;
  std::printf("M=%-5d N=%-5d K=%-5d %3zu samples, rel error %.2e (max per element %.2e), %8.4f ms, %6.2f TFLOP/s  %s\n",
              M, N, K, samples.size(), norm_error, max_error, per_launch_ms, tflops, bad ? "MISMATCH" : "ok");
  return bad == 0;
}

} // namespace

int main(int argc, char **argv) {
  // Ragged shapes, K = 131 (no 16-byte rows: the in-kernel copies) and K = 1.
  std::vector<std::vector<int>> shapes = {{1024, 1024, 1024}, {127, 129, 131},    {1, 1, 1},        {131, 136, 272},
                                          {67, 45, 1},        {4096, 4096, 4096}, {2048, 768, 3072}};
  if (argc == 4) {
    shapes = {{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])}};
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [M N K]\n", argv[0]);
    return 2;
  }
  const OpenDevice gpu = open_device();
  std::printf("device: %s; %s A and B (B stored N x K), %s scales, bf16 out\n", gpu.name.c_str(), kTypeName,
              kRowScales ? "row" : "tensor");
  if (gemm_bias_gelu_load() != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s\n", gemm_bias_gelu_error_message());
    return 2;
  }
  CUresult rejected = launch(0, 0, 0, 0, 0, 0, 1, 1, 1, 0, nullptr);
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
