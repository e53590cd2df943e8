// The check SameBitsCheck.h describes.

#include "bench/gpu_check/SameBitsCheck.h"

#include "bench/common/GemmPointers.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;

constexpr int kSampleRows = 8;

/// A problem's data on the host and the device, the output of p's type.
struct Problem {
  Precision p;
  BitsShape s;
  examples::GemmData host;
  gpu::DeviceBuffer a, b, bias, out;

  Problem(Precision precision, const BitsShape &shape)
      : p(precision), s(shape),
        host(examples::make_data(shape.M, shape.N, shape.K, 5 + shape.K, bench::input_type(precision))) {
    if (p == Precision::TF32) // the values the instruction multiplies
      for (Buffer *operand : {&host.a, &host.b})
        for (float &v : operand->values())
          v = float_to_tf32(v);
    a = upload(host.a);
    b = upload(host.b);
    bias = upload(host.bias);
    out = gpu::DeviceBuffer(bytes());
  }
  size_t bytes() const { return size_t(s.M) * s.N * size_t(bench::output_type(p).bytes()); }
  static gpu::DeviceBuffer upload(const Buffer &buffer) {
    gpu::DeviceBuffer device(buffer.size_in_bytes());
    device.upload(buffer.raw_data(), buffer.size_in_bytes());
    return device;
  }

  /// Launches `exe` into the poisoned output; its bytes.
  std::vector<uint8_t> run(const GpuExecutable &exe, double *ms) {
    *ms = bench::launch_gemm_into_poisoned(exe, a.ptr(), b.ptr(), bias.ptr(), out, s.M, s.N, s.K);
    std::vector<uint8_t> result(bytes());
    gpu::cu_check(gpu::driver().memcpy_dtoh(result.data(), out.ptr(), result.size()), "cuMemcpyDtoH of the output");
    return result;
  }

  /// The output's elements, widened to f32.
  std::vector<float> values(const std::vector<uint8_t> &raw) const {
    Buffer bits({s.M, s.N}, bench::output_type(p));
    std::memcpy(bits.raw_data(), raw.data(), raw.size());
    std::vector<float> widened(bits.size());
    for (size_t n = 0; n < widened.size(); ++n)
      widened[n] = bits.get(n);
    return widened;
  }

  /// ||got - want|| / ||want|| on kSampleRows rows, want = gelu(sum +
  /// bias) in double on the inputs' exact values.
  double error(const std::vector<float> &got) const {
    return sampled_bias_gelu_error(host, s.M, s.N, s.K, kSampleRows, got);
  }
};

} // namespace

const std::vector<BitsShape> kPersistentGridShapes = {{512, 768, 256}, {4096, 4096, 4096}, {515, 776, 259},
                                                      {515, 777, 259}, {131, 264, 1},      {131, 264, 3}};

std::unique_ptr<Pipeline> bias_gelu_pipeline(Precision p, MmaTiling t) {
  examples::Gemm g = examples::make_gemm(examples::Epilogue::BiasGelu, bench::input_type(p), bench::output_type(p));
  use_tma_copies_where_needed(t, -1, -1, -1);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return std::make_unique<Pipeline>(g.out);
}

void check_same_bits(Precision p, const std::function<SameBitsKernels()> &make, SameBitsKernels &kernels,
                     const BitsShape &s, const std::string &name, const std::string &detail,
                     const std::string &baseline) {
  Outcome o;
  try {
    if (!kernels.tested || !kernels.baseline) // both, or neither (a failed build is tried again)
      kernels = make();
    Problem problem(p, s);
    std::vector<uint8_t> tested = problem.run(kernels.tested->gpu_executable(target_for_current_device()), &o.ms);
    std::vector<float> values = problem.values(tested);
    for (float v : values)
      o.not_finite += std::isfinite(v) ? 0 : 1;
    o.error = problem.error(values);
    o.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
    o.detail = detail;
    record(name, s.str(), "double (" + std::to_string(kSampleRows) + " rows)", o);
    Outcome bits;
    std::vector<uint8_t> plain = problem.run(kernels.baseline->gpu_executable(target_for_current_device()), &bits.ms);
    size_t width = size_t(bench::output_type(p).bytes()), differ = 0;
    for (size_t n = 0; n < tested.size(); n += width)
      differ += std::memcmp(&tested[n], &plain[n], width) != 0;
    bits.error = double(differ) / double(tested.size() / width);
    bits.tolerance = 0;
    bits.detail = std::to_string(differ) + " of " + std::to_string(tested.size() / width) + " differ";
    record(name, s.str(), baseline, bits);
  } catch (const std::exception &error) {
    o.failure = error.what();
    record(name, s.str(), "double", o);
  }
}

void check_same_bits_of_tilings(Precision p, const MmaTiling &tested, const MmaTiling &baseline,
                                const std::vector<BitsShape> &shapes, const std::string &name,
                                const std::string &baseline_name) {
  auto make = [&] { return SameBitsKernels{bias_gelu_pipeline(p, tested), bias_gelu_pipeline(p, baseline)}; };
  SameBitsKernels kernels;
  for (const BitsShape &s : shapes)
    check_same_bits(p, make, kernels, s, name, tested.str(), baseline_name);
}

} // namespace coalesce::gpu_check
