#include "runtime/GpuCandidateTiming.h"

#include "dsl/Error.h"
#include "runtime/Buffer.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuExecutable.h"
#include "runtime/GpuTiming.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

namespace coalesce {

namespace {

constexpr int kSampledRows = 16;

double epilogue(const std::string &name, double x, double bias) {
  if (name == "none")
    return x;
  x += bias;
  if (name == "bias")
    return x;
  if (name == "bias_relu")
    return x > 0 ? x : 0;
  if (name == "bias_gelu")
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Everything the steps share: the inputs on host and device, the reference
// rows, the output and the L2 flush buffer.
struct GemmBench {
  GemmProblem problem;
  int M, N, K;
  Buffer A, B, bias, out;
  gpu::DeviceBuffer A_dev, B_dev, bias_dev, out_dev, flush;
  std::vector<int> rows;
  std::vector<double> reference; // rows.size() x N
  double tolerance;

  explicit GemmBench(const GemmProblem &p)
      : problem(p), M(static_cast<int>(p.M)), N(static_cast<int>(p.N)), K(static_cast<int>(p.K)),
        A({M, K}, gemm_input_type(p)),
        B(p.b_layout == GemmBLayout::NK ? std::vector<int>{N, K} : std::vector<int>{K, N}, gemm_input_type(p)), bias({N}), out({M, N}, gemm_output_type(p)),
        tolerance(tuning_tolerance(p)) {
    A.fill_random(1);
    B.fill_random(2);
    bias.fill_random(3);
    A_dev = gpu::DeviceBuffer(A.size_in_bytes());
    B_dev = gpu::DeviceBuffer(B.size_in_bytes());
    bias_dev = gpu::DeviceBuffer(bias.size_in_bytes());
    out_dev = gpu::DeviceBuffer(out.size_in_bytes());
    A_dev.upload(A.raw_data(), A.size_in_bytes());
    B_dev.upload(B.raw_data(), B.size_in_bytes());
    bias_dev.upload(bias.raw_data(), bias.size_in_bytes());
    flush = make_l2_flush_buffer();
    for (int r = 0; r < kSampledRows; ++r) {
      int row = static_cast<int>(int64_t(r) * (M - 1) / (kSampledRows - 1));
      if (rows.empty() || rows.back() != row)
        rows.push_back(row);
    }
    compute_reference();
  }

  void compute_reference() {
    reference.assign(rows.size() * static_cast<size_t>(N), 0.0);
    // K x N, whichever way B is stored.
    const bool b_nk = problem.b_layout == GemmBLayout::NK;
    std::vector<float> b_values(B.size());
    for (size_t k = 0; k < static_cast<size_t>(K); ++k)
      for (size_t j = 0; j < static_cast<size_t>(N); ++j)
        b_values[k * N + j] = B.get(b_nk ? j * K + k : k * N + j);
    for (size_t r = 0; r < rows.size(); ++r) {
      double *row = reference.data() + r * static_cast<size_t>(N);
      for (int k = 0; k < K; ++k) {
        double a = A.at(rows[r], k);
        const float *b = b_values.data() + static_cast<size_t>(k) * N;
        for (int j = 0; j < N; ++j)
          row[j] += a * b[j];
      }
      for (int j = 0; j < N; ++j)
        row[j] = epilogue(problem.epilogue, row[j], bias.get(static_cast<size_t>(j)));
    }
  }

  std::vector<CUdeviceptr> pointers(const GpuExecutable &exe) const {
    std::vector<CUdeviceptr> result;
    for (const Argument &arg : exe.program().args) {
      if (!arg.is_buffer() || arg.is_workspace)
        result.push_back(0);
      else if (arg.is_output)
        result.push_back(out_dev.ptr());
      else if (arg.name == "A")
        result.push_back(A_dev.ptr());
      else if (arg.name == "B")
        result.push_back(B_dev.ptr());
      else if (arg.name == "bias")
        result.push_back(bias_dev.ptr());
      else
        internal_error("the tuned GEMM has an unexpected argument '", arg.name, "'");
    }
    return result;
  }

  // ||out - ref|| / ||ref|| over the sampled rows; infinity for a value that
  // is not finite (never written, or NaN).
  double relative_error() const {
    double difference = 0, norm = 0;
    for (size_t r = 0; r < rows.size(); ++r)
      for (int j = 0; j < N; ++j) {
        double value = out.get(static_cast<size_t>(rows[r]) * N + j);
        double expected = reference[r * N + j];
        if (!std::isfinite(value))
          return std::numeric_limits<double>::infinity();
        difference += (value - expected) * (value - expected);
        norm += expected * expected;
      }
    return std::sqrt(difference / std::max(norm, 1e-300));
  }

  Measurement measure(CompiledCandidate &c, bool check, const TimingProtocol &protocol) {
    Measurement m;
    try {
      const GpuExecutable &exe = c.pipeline.gpu_executable(c.target);
      std::vector<CUdeviceptr> args = pointers(exe);
      std::map<std::string, int64_t> params{{"M", M}, {"N", N}, {"K", K}};
      auto run = [&] { exe.launch(args, params); };
      if (check) {
        out_dev.fill_bytes(0xFF); // NaN in every float type
        run();
        gpu::synchronize();
        out_dev.download(out.raw_data(), out.size_in_bytes());
        double error = relative_error();
        if (!(error <= tolerance)) {
          char text[160];
          std::snprintf(text, sizeof text, "relative error %.3g on %zu sampled rows, above the tolerance %.3g",
                        error, rows.size(), tolerance);
          m.error = text;
          m.rule = "numerics";
          return m;
        }
      }
      GpuTiming t = time_gpu_runs(run, flush, protocol);
      m.ok = true;
      m.ms = t.median_ms;
    } catch (const UserError &error) {
      m.error = error.what();
      m.rule = "launch";
    }
    return m;
  }
};

} // namespace

double tuning_tolerance(const GemmProblem &problem) {
  if (problem.out_dtype == "bf16")
    return 0x1p-8;
  if (problem.out_dtype == "f16" || problem.dtype == "tf32")
    return 0x1p-10;
  return 1e-4;
}

GpuIdentity current_gpu_identity() {
  gpu::Device &device = gpu::Device::get();
  return GpuIdentity{device.name(), target_for_current_device().sm(), device.sm_count()};
}

TimingSteps gpu_timing_steps(const GemmProblem &problem) {
  problem.validate();
  gpu::Device::get(); // GpuUnavailable now, before any work
  auto bench = std::make_shared<GemmBench>(problem);
  TimingSteps steps;
  // Loading, on the compile threads (the context is made current on each;
  // gpu::Device::get), through ptxas: the driver's JIT compiles one module
  // at a time, and made 50 candidates take 36-43 s on the H200's machine,
  // the timing thread waiting behind it.
  // What the launches at the problem's sizes run: the program specialized
  // for its sizes that are multiples of 16, 8 or 4, or the general one.
  steps.prepare = [problem](CompiledCandidate &c) {
    c.pipeline.gpu_executable(c.target, GpuAssembler::Ptxas)
        .prepare({{"M", problem.M}, {"N", problem.N}, {"K", problem.K}});
  };
  steps.rank = [bench](CompiledCandidate &c) { return bench->measure(c, true, quick_timing()); };
  steps.confirm = [bench](CompiledCandidate &c) { return bench->measure(c, false, benchmark_timing()); };
  return steps;
}

} // namespace coalesce
