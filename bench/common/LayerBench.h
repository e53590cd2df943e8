#pragma once
// What the layer benchmarks (coalesce-bench-fp8, coalesce-bench-swiglu,
// coalesce-bench-batched) share: their --shapes list, the check-then-time step of one variant
// (poisoned output, one run, the caller's sampled error against a double
// reference, then the benchmark's protocol: runtime/GpuTiming.h), and
// main()'s flags, GPU checks and registration. Each program keeps its own
// problem data, variants and reference.

#include "bench/common/Precisions.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuTiming.h"
#include "runtime/Version.h"

#include <benchmark/benchmark.h>
#include <llvm/Support/CommandLine.h>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::bench {

struct LayerShape {
  int M, N, K;
  int batch = 0; ///< products of a batch (coalesce-bench-batched's BxMxNxK); 0: one product, no batch
  std::string name() const {
    return (batch ? std::to_string(batch) + "x" : "") + std::to_string(M) + "x" + std::to_string(N) + "x" +
           std::to_string(K);
  }
};

/// "MxNxK,..." (with `batched`, "BxMxNxK,...") with each at least 1, N a
/// multiple of `n_multiple` and K of `k_multiple` (`why` says why, in the
/// error); nullopt and *error if not.
inline std::optional<std::vector<LayerShape>> parse_layer_shapes(const std::string &list, int n_multiple,
                                                                 int k_multiple, const std::string &why,
                                                                 std::string *error, bool batched = false) {
  std::vector<LayerShape> shapes;
  for (const std::string &item : split_list(list)) {
    LayerShape s{};
    char tail = 0;
    const bool read = batched ? std::sscanf(item.c_str(), "%dx%dx%dx%d%c", &s.batch, &s.M, &s.N, &s.K, &tail) == 4
                              : std::sscanf(item.c_str(), "%dx%dx%d%c", &s.M, &s.N, &s.K, &tail) == 3;
    if (!read || (batched && s.batch < 1) || s.M < 1 || s.N < 1 || s.K < 1 || s.N % n_multiple || s.K % k_multiple) {
      *error = "bad shape '" + item + "': expected " + (batched ? "BxMxNxK" : "MxNxK") + ", each at least 1, " + why;
      return std::nullopt;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    *error = "no shapes given";
    return std::nullopt;
  }
  return shapes;
}

/// `b`'s bytes in a device buffer of its size.
inline gpu::DeviceBuffer upload(const Buffer &b) {
  gpu::DeviceBuffer d(b.size_in_bytes());
  d.upload(b.raw_data(), b.size_in_bytes());
  return d;
}

/// The rows a variant is checked on (16, spread from the first to the
/// last) and their exact sums A(r, :) . W(c, :) for every row c of W (N x K,
/// as nn.Linear's weight): row n, column c at n * W's rows + c. Products of
/// 16- and 8-bit floats are exact in double, and so are their sums at the
/// benchmarks' K.
struct SampledSums {
  std::vector<int> rows;
  std::vector<double> sums;
  SampledSums(const Buffer &A, const Buffer &W) {
    const int M = A.shape()[0], K = A.shape()[1], N = W.shape()[0];
    std::vector<float> w(size_t(N) * K), a(static_cast<size_t>(K));
    for (size_t e = 0; e < w.size(); ++e)
      w[e] = W.get(e);
    for (int n = 0; n < 16; ++n) {
      int r = int((int64_t(n) * (M - 1)) / 15);
      rows.push_back(r);
      for (int k = 0; k < K; ++k)
        a[size_t(k)] = A.at(r, k);
      for (int c = 0; c < N; ++c) {
        double sum = 0;
        const float *w_row = &w[size_t(c) * K];
        for (int k = 0; k < K; ++k)
          sum += double(a[size_t(k)]) * w_row[k];
        sums.push_back(sum);
      }
    }
  }
};

/// One variant's benchmark body: `run` once into the output the caller
/// poisoned, `sampled_error` (||got - want|| / ||want|| over the checked
/// rows, counting elements not finite) within `tolerance`, else the
/// benchmark is skipped with the failure; then timed (`flops` per run for
/// TFLOPs), the counters set, and the timing returned. `program` prefixes
/// the messages on stderr.
inline std::optional<GpuTiming> check_then_time(benchmark::State &state, const char *program, const std::string &what,
                                                const LayerShape &s, double flops, double tolerance,
                                                const std::function<void()> &run,
                                                const std::function<double(size_t *)> &sampled_error,
                                                gpu::DeviceBuffer &flush) {
  run();
  gpu::synchronize();
  size_t not_finite = 0;
  double error = sampled_error(&not_finite);
  if (not_finite || !(error <= tolerance)) {
    std::string failure = what + ": relative error " + std::to_string(error) + " (tolerance " +
                          std::to_string(tolerance) + "), " + std::to_string(not_finite) + " elements not finite";
    std::fprintf(stderr, "%s: CHECK FAILED: %s\n", program, failure.c_str());
    state.SkipWithError(failure.c_str());
    return std::nullopt;
  }
  GpuTiming t;
  for (auto _ : state) {
    t = time_gpu_runs(run, flush, benchmark_timing());
    state.SetIterationTime(t.median_ms * 1e-3);
  }
  if (s.batch)
    state.counters["batch"] = s.batch;
  state.counters["M"] = s.M;
  state.counters["N"] = s.N;
  state.counters["K"] = s.K;
  state.counters["median_ms"] = t.median_ms;
  state.counters["min_ms"] = t.min_ms;
  state.counters["max_ms"] = t.max_ms;
  state.counters["TFLOPs"] = flops / (t.median_ms * 1e-3) / 1e12;
  state.counters["rel_error"] = error;
  return t;
}

/// A layer benchmark's state across its benchmarks: the L2 flush buffer,
/// the problem of the shape now running (its data built once per shape: a
/// shape's benchmarks are registered together), and the baselines' median
/// times by "shape/variant", for the ratios. `Problem` is built from
/// (LayerShape, multiprocessors) and keeps its shape as `s`.
template <class Problem> struct LayerBenchState {
  gpu::DeviceBuffer flush;
  std::unique_ptr<Problem> problem;
  std::map<std::string, double> baseline_ms;

  /// A baseline's median time kept for the shape; for ours (`baseline`
  /// false), the time ratios against every baseline kept, as counters
  /// ratio_vs_<name> (as coalesce-bench's: above 1, slower).
  template <class Variant, size_t Count>
  void record_time(benchmark::State &state, const LayerShape &s, Variant v, bool baseline, double median_ms,
                   const Variant (&variants)[Count], const char *(*name)(Variant)) {
    if (baseline) {
      baseline_ms[s.name() + "/" + name(v)] = median_ms;
      return;
    }
    for (Variant c : variants)
      if (auto it = baseline_ms.find(s.name() + "/" + name(c)); it != baseline_ms.end())
        state.counters[std::string("ratio_vs_") + name(c)] = median_ms / it->second;
  }

  Problem &problem_for(const LayerShape &s) {
    if (!problem || problem->s.name() != s.name()) {
      problem.reset(); // the last shape's device buffers go first
      problem = std::make_unique<Problem>(s, gpu::Device::get().sm_count());
    }
    return *problem;
  }
};

/// Registers run(state, shape, variant) for every shape and variant as
/// "<prefix>/<variant's name>/<shape>", timed by hand, one iteration each.
template <class Variant, size_t Count>
void register_layer_benchmarks(const std::string &prefix, const std::vector<LayerShape> &shapes,
                               const Variant (&variants)[Count], const char *(*name)(Variant),
                               void (*run)(benchmark::State &, LayerShape, Variant)) {
  for (const LayerShape &s : shapes)
    for (Variant v : variants)
      benchmark::RegisterBenchmark((prefix + "/" + name(v) + "/" + s.name()).c_str(), run, s, v)
          ->UseManualTime()
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
}

/// What main() needs to know of a layer benchmark.
struct LayerBenchProgram {
  const char *name;           ///< "coalesce-bench-fp8"
  const char *overview;       ///< --help's first line
  const char *default_shapes; ///< --shapes' default
  const char *shapes_help;    ///< --shapes' description
  int n_multiple, k_multiple; ///< what parse_layer_shapes asks of N and K
  const char *shape_rule;     ///< why, for the error
  const char *needs;          ///< what the GPU must have, for the message when sm_90a is missing
  bool batched = false;       ///< shapes are BxMxNxK
};

/// main(): the flags (--shapes, then Google Benchmark's), a bad flag exit
/// 2; without a GPU, or one without the warpgroup MMA, a line saying
/// nothing was measured and exit 0; else `register_all(shapes)` registers
/// the benchmarks (with the device's context added) and they run; an
/// exception is exit 1.
inline int layer_bench_main(int argc, char **argv, const LayerBenchProgram &p,
                            const std::function<void(const std::vector<LayerShape> &)> &register_all,
                            const std::function<void()> &after_run) {
  namespace cl = llvm::cl;
  cl::OptionCategory category(std::string(p.name) + " options");
  cl::opt<std::string> shapes_flag("shapes", cl::desc(p.shapes_help), cl::value_desc("list"),
                                   cl::init(p.default_shapes), cl::cat(category));
  cl::list<std::string> benchmark_flags(cl::Sink, cl::desc("Google Benchmark's --benchmark_* flags"),
                                        cl::cat(category));
  cl::HideUnrelatedOptions(category);
  print_version_as(p.name);
  if (!cl::ParseCommandLineOptions(argc, argv, p.overview))
    return 2;
  std::string error;
  std::optional<std::vector<LayerShape>> shapes =
      parse_layer_shapes(shapes_flag, p.n_multiple, p.k_multiple, p.shape_rule, &error, p.batched);
  if (!shapes) {
    std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
    return 2;
  }
  std::vector<char *> rest = {argv[0]};
  for (std::string &flag : benchmark_flags)
    rest.push_back(flag.data());
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data()))
    return 2;
  std::string why_no_gpu;
  if (!gpu::gpu_available(&why_no_gpu)) {
    std::printf("%s: no GPU (%s): nothing measured\n", p.name, why_no_gpu.c_str());
    return 0;
  }
  if (!target_for_current_device().has_warpgroup_mma()) {
    std::printf("%s: the GPU's target is %s; %s needs sm_90a: nothing measured\n", p.name,
                target_for_current_device().sm().c_str(), p.needs);
    return 0;
  }
  try {
    benchmark::AddCustomContext("gpu", gpu::Device::get().name());
    benchmark::AddCustomContext("protocol", "poisoned output, 16 rows vs a double reference (tolerance 4e-3), "
                                            ">=300 ms warm-up, 30..200 timed runs between CUDA events, L2 flushed "
                                            "before each; time = median");
    register_all(*shapes);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    after_run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n", p.name, e.what());
    return 1;
  }
  return 0;
}

} // namespace coalesce::bench
