// coalesce-bench: Coalesce's FP32 GEMM (alone, and fused with bias + GELU)
// against cuBLAS SGEMM, the cuBLAS chain (SGEMM, then a bias + GELU kernel)
// and cuBLASLt's fused GELU_BIAS epilogue, on the GPU, with Google Benchmark.
//
//   out(i, j) = gelu(sum_k A(i, k) * B(k, j) + bias(j))     FP32, row-major
//
// Variants, in the order they run for each shape (all on the same buffers):
//   cublas_sgemm        cublasSgemm (true FP32), A * B
//   cublas_chain        cublasSgemm, then the bias + exact-GELU kernel
//   cublaslt_gelu_bias  cuBLASLt, CUBLASLT_EPILOGUE_GELU_BIAS (tanh GELU)
//   coalesce_gemm       make_gemm(Epilogue::None) + schedule_gemm
//   coalesce_fused      make_gemm(Epilogue::BiasGelu) + schedule_gemm
// each with the default tiling for its shape (default_gemm_tiling).
//
// Protocol (shared/BENCH.md), for every (variant, shape):
//   1. correctness: the output is poisoned (NaN), the variant runs once, every
//      element must be finite and ||out - ref|| / ||ref|| < 1e-4, where ref is
//      cuBLAS SGEMM's result (itself checked against a double-precision
//      product on sampled rows), plus bias and the erf GELU (coalesce_fused,
//      cublas_chain) or the tanh GELU (cublaslt_gelu_bias), both computed in
//      double on the host. coalesce_fused is also run and checked at K = 1 and
//      K = 3 against a double reference. A failure skips the benchmark with
//      an error (state.SkipWithError).
//   2. warm-up: the variant runs back to back for at least 300 ms.
//   3. at least 30 timed runs (more for short kernels, up to 200), each
//      between its own pair of CUDA events, with the L2 flushed before each
//      (a buffer of max(2 x L2, 256 MiB) written with cuMemsetD8).
// Google Benchmark runs each benchmark for one iteration holding all the
// timed runs, and its (manual) time is their median. Counters: median_ms,
// min_ms, max_ms, TFLOPs (2*M*N*K / median), ratio_vs_sgemm (median over the
// cublas_sgemm median of the same shape in this run), ratio_vs_chain,
// rel_error, timed_runs, and for Coalesce's variants ptx_compile_ms,
// registers, spill_bytes, shared_bytes.
//
// Usage: coalesce-bench [--shapes=LIST] [Google Benchmark flags]
//   LIST: comma-separated, each MxNxK or an alias: 1024, 2048, 4096, 8192
//   (cubes), ragged (4093x4091x4097), llama (8192x11008x4096), all (default).
//   e.g. --benchmark_out=bench.json --benchmark_out_format=json
// Without a GPU it says why and exits 0 (CI builds and runs it there).

#include "bench/reference/CublasReference.h"
#include "codegen/PtxAssembler.h"
#include "examples/Gemm.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "scheduler/GemmSchedule.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace coalesce;
using examples::Epilogue;

// ------------------------------------------------------------------ settings

constexpr double kWarmupMs = 300;
constexpr int kMinTimedRuns = 30;
constexpr int kMaxTimedRuns = 200;
/// Timed runs are added (up to kMaxTimedRuns) until they sum to about this.
constexpr double kTargetTimedMs = 400;
constexpr double kTolerance = 1e-4;
constexpr int kSampledRows = 8;

struct Shape {
  int M, N, K;
  std::string name() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
  double flops() const { return 2.0 * M * N * K; }
};

const std::vector<std::pair<std::string, Shape>> kShapes = {
    {"1024", {1024, 1024, 1024}},   {"2048", {2048, 2048, 2048}},     {"4096", {4096, 4096, 4096}},
    {"8192", {8192, 8192, 8192}},   {"ragged", {4093, 4091, 4097}}, {"llama", {8192, 11008, 4096}},
};

enum class Variant { CublasSgemm, CublasChain, CublasLt, CoalesceGemm, CoalesceFused };
const Variant kVariants[] = {Variant::CublasSgemm, Variant::CublasChain, Variant::CublasLt, Variant::CoalesceGemm,
                             Variant::CoalesceFused};

const char *variant_name(Variant v) {
  switch (v) {
  case Variant::CublasSgemm:
    return "cublas_sgemm";
  case Variant::CublasChain:
    return "cublas_chain";
  case Variant::CublasLt:
    return "cublaslt_gelu_bias";
  case Variant::CoalesceGemm:
    return "coalesce_gemm";
  case Variant::CoalesceFused:
    return "coalesce_fused";
  }
  return "?";
}

/// What the variant computes from s = (A * B)(i, j) + bias(j).
enum class Function { Gemm, GeluErf, GeluTanh };

Function variant_function(Variant v) {
  switch (v) {
  case Variant::CublasSgemm:
  case Variant::CoalesceGemm:
    return Function::Gemm;
  case Variant::CublasLt:
    return Function::GeluTanh;
  default:
    return Function::GeluErf;
  }
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

// ----------------------------------------------------------------- checking

/// Runs body(begin, end) over [0, n) split across the host's cores.
void parallel_for(size_t n, const std::function<void(size_t, size_t, int)> &body, int *workers_used = nullptr) {
  int workers = static_cast<int>(std::max(1u, std::min(32u, std::thread::hardware_concurrency())));
  workers = static_cast<int>(std::min<size_t>(workers, std::max<size_t>(n, 1)));
  if (workers_used)
    *workers_used = workers;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    size_t begin = n * w / workers, end = n * (w + 1) / workers;
    threads.emplace_back(body, begin, end, w);
  }
  for (std::thread &t : threads)
    t.join();
}

struct Comparison {
  double relative_error = 0;
  size_t not_finite = 0;
  bool ok() const { return not_finite == 0 && relative_error < kTolerance; }
  std::string describe() const {
    char text[160];
    if (not_finite)
      std::snprintf(text, sizeof text, "%zu values not finite (unwritten or NaN)", not_finite);
    else
      std::snprintf(text, sizeof text, "relative error %.3g (tolerance %.0e)", relative_error, kTolerance);
    return text;
  }
};

/// ||ours - expected|| / ||expected|| over rows [0, rows) of an N-column
/// matrix; expected(i, j) in double.
Comparison compare(const float *ours, size_t rows, int N, const std::function<double(size_t, int)> &expected) {
  const int max_workers = 32;
  std::vector<double> diff(max_workers, 0), norm(max_workers, 0);
  std::vector<size_t> bad(max_workers, 0);
  parallel_for(rows, [&](size_t begin, size_t end, int w) {
    double d = 0, n = 0;
    size_t b = 0;
    for (size_t i = begin; i < end; ++i)
      for (int j = 0; j < N; ++j) {
        double value = ours[i * N + j];
        double e = expected(i, j);
        if (!std::isfinite(value)) {
          ++b;
          continue;
        }
        d += (value - e) * (value - e);
        n += e * e;
      }
    diff[w] = d;
    norm[w] = n;
    bad[w] = b;
  });
  Comparison c;
  double d = 0, n = 0;
  for (int w = 0; w < max_workers; ++w) {
    d += diff[w];
    n += norm[w];
    c.not_finite += bad[w];
  }
  c.relative_error = c.not_finite ? INFINITY : std::sqrt(d / std::max(n, 1e-300));
  return c;
}

// ------------------------------------------------------------ shared state

/// Device-wide state: the flush buffer, and the medians measured so far.
struct Bench {
  gpu::DeviceBuffer flush;
  std::map<std::string, double> sgemm_median, chain_median; // by shape name
};
Bench *g_bench = nullptr;

/// One shape's inputs and outputs, on the host and the device, shared by all
/// its variants. Only one shape is held at a time (benchmarks run in the
/// order they were registered, shape by shape).
struct ShapeData {
  Shape s;
  Buffer A, B, bias;
  gpu::DeviceBuffer A_dev, B_dev, bias_dev, out_dev, tmp_dev;
  std::vector<float> out_host;
  /// cuBLAS SGEMM's A * B (checked against double on sampled rows), once.
  std::vector<float> gemm_ref;
  std::string gemm_ref_error; // non-empty if the reference itself failed
  bool have_gemm_ref = false;

  explicit ShapeData(const Shape &shape)
      : s(shape), A({shape.M, shape.K}), B({shape.K, shape.N}), bias({shape.N}),
        A_dev(A.size() * sizeof(float)), B_dev(B.size() * sizeof(float)), bias_dev(bias.size() * sizeof(float)),
        out_dev(size_t(shape.M) * shape.N * sizeof(float)), tmp_dev(size_t(shape.M) * shape.N * sizeof(float)),
        out_host(size_t(shape.M) * shape.N) {
    // Random inputs, uniform in [-1, 1): never zeros or ones.
    A.fill_random(1);
    B.fill_random(2);
    bias.fill_random(3);
    A_dev.upload(A.values());
    B_dev.upload(B.values());
    bias_dev.upload(bias.values());
  }

  /// Poisons `buffer`, runs `run`, waits, and reads `buffer` into out_host.
  void run_poisoned(gpu::DeviceBuffer &buffer, const std::function<void()> &run) {
    buffer.fill_bytes(0xFF);
    run();
    gpu::synchronize();
    buffer.download(out_host);
  }

  /// Sampled rows of A * B in double, compared with `ours` (M x N).
  Comparison check_gemm_sampled(const float *ours) const {
    std::vector<int> rows;
    for (int r = 0; r < kSampledRows; ++r)
      rows.push_back(static_cast<int>(int64_t(r) * (s.M - 1) / (kSampledRows - 1)));
    std::vector<double> expected(rows.size() * s.N, 0.0);
    parallel_for(rows.size(), [&](size_t begin, size_t end, int) {
      for (size_t r = begin; r < end; ++r) {
        double *row = &expected[r * s.N];
        for (int k = 0; k < s.K; ++k) {
          double a = A(rows[r], k);
          const float *b = B.data() + size_t(k) * s.N;
          for (int j = 0; j < s.N; ++j)
            row[j] += a * b[j];
        }
      }
    });
    std::vector<float> sampled(rows.size() * s.N);
    for (size_t r = 0; r < rows.size(); ++r)
      std::memcpy(&sampled[r * s.N], ours + size_t(rows[r]) * s.N, s.N * sizeof(float));
    Comparison c = compare(sampled.data(), rows.size(), s.N,
                           [&](size_t r, int j) { return expected[r * s.N + j]; });
    // Every element must have been written, not only the sampled rows.
    size_t total = size_t(s.M) * s.N;
    for (size_t e = 0; e < total; ++e)
      if (!std::isfinite(ours[e]))
        ++c.not_finite;
    if (c.not_finite)
      c.relative_error = INFINITY;
    return c;
  }

  /// The reference A * B (cuBLAS SGEMM), computed once.
  const std::vector<float> &gemm_reference() {
    if (!have_gemm_ref) {
      run_poisoned(tmp_dev, [&] {
        reference::sgemm(s.M, s.N, s.K, A_dev.as<float>(), B_dev.as<float>(), tmp_dev.as<float>());
      });
      Comparison c = check_gemm_sampled(out_host.data());
      if (!c.ok())
        gemm_ref_error = "the cuBLAS SGEMM reference failed its double-precision check: " + c.describe();
      gemm_ref = out_host;
      have_gemm_ref = true;
    }
    return gemm_ref;
  }

  /// Compares out_host with the reference for `f`, every element.
  Comparison check_against_reference(Function f) {
    const std::vector<float> &g = gemm_reference();
    const float *b = bias.data();
    const int N = s.N;
    switch (f) {
    case Function::Gemm:
      return compare(out_host.data(), s.M, N, [&](size_t i, int j) { return double(g[i * N + j]); });
    case Function::GeluErf:
      return compare(out_host.data(), s.M, N,
                     [&](size_t i, int j) { return gelu_erf(double(g[i * N + j]) + b[j]); });
    case Function::GeluTanh:
      return compare(out_host.data(), s.M, N,
                     [&](size_t i, int j) { return gelu_tanh(double(g[i * N + j]) + b[j]); });
    }
    return {};
  }

  /// gelu(A' * B' + bias) in double for a small K, where A' (M x K) and B'
  /// (K x N) are the first elements of A and B read with that K, compared with
  /// out_host.
  Comparison check_small_k(int K) const {
    const float *a = A.data(), *b = B.data(), *c = bias.data();
    const int N = s.N;
    return compare(out_host.data(), s.M, N, [&](size_t i, int j) {
      double sum = 0;
      for (int k = 0; k < K; ++k)
        sum += double(a[i * K + k]) * b[size_t(k) * N + j];
      return gelu_erf(sum + c[j]);
    });
  }
};

std::unique_ptr<ShapeData> g_data;

ShapeData &data_for(const Shape &s) {
  if (!g_data || g_data->s.name() != s.name()) {
    g_data.reset(); // free the previous shape's buffers first
    g_data = std::make_unique<ShapeData>(s);
  }
  return *g_data;
}

// ------------------------------------------------------------------- timing

struct Timing {
  double median = 0, min = 0, max = 0;
  int warmup_runs = 0, timed_runs = 0;
};

Timing time_runs(const std::function<void()> &run, gpu::DeviceBuffer &flush) {
  Timing t;
  // Warm-up: back to back (synchronizing every few runs) for at least kWarmupMs.
  auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (;;) {
    run();
    ++t.warmup_runs;
    if (t.warmup_runs % 4 == 0) {
      gpu::synchronize();
      if (elapsed_ms() >= kWarmupMs)
        break;
    }
  }
  double per_run = elapsed_ms() / t.warmup_runs;
  int runs = static_cast<int>(std::ceil(kTargetTimedMs / std::max(per_run, 1e-3)));
  runs = std::clamp(runs, kMinTimedRuns, kMaxTimedRuns);

  gpu::EventTimer timer;
  std::vector<double> ms;
  for (int n = 0; n < runs; ++n) {
    flush.fill_bytes(static_cast<uint8_t>(n + 1)); // evicts what the last run left in the L2
    timer.start();
    run();
    timer.stop();
    ms.push_back(timer.elapsed_ms());
  }
  std::sort(ms.begin(), ms.end());
  t.timed_runs = runs;
  t.min = ms.front();
  t.max = ms.back();
  t.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return t;
}

// --------------------------------------------------------------- benchmark

/// One of Coalesce's variants, compiled and loaded.
struct CoalesceKernel {
  examples::Gemm gemm;
  std::unique_ptr<Pipeline> pipeline;
  const GpuExecutable *executable = nullptr;
  std::vector<CUdeviceptr> pointers;
  GemmTiling tiling;
  double ptx_compile_ms = 0;
  std::optional<PtxasResult> ptxas;
};

std::unique_ptr<CoalesceKernel> compile_coalesce(Epilogue epilogue, ShapeData &d) {
  auto kernel = std::make_unique<CoalesceKernel>(CoalesceKernel{examples::make_gemm(epilogue), nullptr, nullptr, {}, {}, 0, {}});
  examples::Gemm &g = kernel->gemm;
  kernel->tiling = default_gemm_tiling(d.s.M, d.s.N, d.s.K, gpu::Device::get().sm_count());
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, kernel->tiling);
  kernel->pipeline = std::make_unique<Pipeline>(g.out);
  GpuTarget target = target_for_current_device();
  kernel->pipeline->ptx(target);
  kernel->ptx_compile_ms = kernel->pipeline->last_ptx_compile_ms();
  if (ptxas_available()) {
    try {
      kernel->ptxas = kernel->pipeline->assemble(target);
    } catch (const UserError &error) {
      std::fprintf(stderr, "coalesce-bench: ptxas report unavailable: %s\n", error.what());
    }
  }
  kernel->executable = &kernel->pipeline->gpu_executable(target);
  for (const Argument &arg : kernel->executable->program().args) {
    if (!arg.is_buffer())
      kernel->pointers.push_back(0);
    else if (arg.name == "A")
      kernel->pointers.push_back(d.A_dev.ptr());
    else if (arg.name == "B")
      kernel->pointers.push_back(d.B_dev.ptr());
    else if (arg.name == "bias")
      kernel->pointers.push_back(d.bias_dev.ptr());
    else if (arg.is_output)
      kernel->pointers.push_back(d.out_dev.ptr());
    else
      user_error("coalesce-bench: unexpected argument '", arg.name, "'");
  }
  return kernel;
}

void run_benchmark(benchmark::State &state, Shape s, Variant v) {
  try {
    ShapeData &d = data_for(s);
    const float *A = d.A_dev.as<float>(), *B = d.B_dev.as<float>(), *bias = d.bias_dev.as<float>();
    float *out = d.out_dev.as<float>(), *tmp = d.tmp_dev.as<float>();
    std::function<void()> run;
    std::unique_ptr<CoalesceKernel> kernel;
    std::map<std::string, int64_t> params{{"M", s.M}, {"N", s.N}, {"K", s.K}};
    switch (v) {
    case Variant::CublasSgemm:
      run = [=] { reference::sgemm(s.M, s.N, s.K, A, B, out); };
      break;
    case Variant::CublasChain:
      run = [=] { reference::chain(s.M, s.N, s.K, A, B, bias, tmp, out); };
      break;
    case Variant::CublasLt:
      run = [=] { reference::lt_gelu_bias(s.M, s.N, s.K, A, B, bias, out); };
      break;
    case Variant::CoalesceGemm:
    case Variant::CoalesceFused:
      kernel = compile_coalesce(v == Variant::CoalesceGemm ? Epilogue::None : Epilogue::BiasGelu, d);
      run = [&, k = kernel.get()] { k->executable->launch(k->pointers, params); };
      break;
    }

    // 1. Correctness, before any timing.
    if (!d.gemm_reference().empty() && !d.gemm_ref_error.empty()) {
      state.SkipWithError(d.gemm_ref_error.c_str());
      return;
    }
    d.run_poisoned(d.out_dev, run);
    Comparison c = v == Variant::CublasSgemm ? d.check_gemm_sampled(d.out_host.data())
                                             : d.check_against_reference(variant_function(v));
    std::string failure;
    if (!c.ok())
      failure = std::string(variant_name(v)) + " " + s.name() + ": " + c.describe();
    if (failure.empty() && v == Variant::CoalesceFused) {
      // The seed's check for a fused epilogue: K = 1 and K = 3.
      for (int K : {1, 3}) {
        std::map<std::string, int64_t> small{{"M", s.M}, {"N", s.N}, {"K", K}};
        d.run_poisoned(d.out_dev, [&] { kernel->executable->launch(kernel->pointers, small); });
        Comparison ck = d.check_small_k(K);
        if (!ck.ok()) {
          failure = std::string(variant_name(v)) + " " + s.name() + " at K=" + std::to_string(K) + ": " +
                    ck.describe();
          break;
        }
      }
    }
    if (!failure.empty()) {
      std::fprintf(stderr, "coalesce-bench: CHECK FAILED: %s\n", failure.c_str());
      state.SkipWithError(failure.c_str());
      return;
    }

    // 2 and 3. Warm-up, then timed runs; one benchmark iteration holds them all.
    Timing t;
    for (auto _ : state) {
      t = time_runs(run, g_bench->flush);
      state.SetIterationTime(t.median * 1e-3);
    }

    state.counters["M"] = s.M;
    state.counters["N"] = s.N;
    state.counters["K"] = s.K;
    state.counters["median_ms"] = t.median;
    state.counters["min_ms"] = t.min;
    state.counters["max_ms"] = t.max;
    state.counters["TFLOPs"] = s.flops() / (t.median * 1e-3) / 1e12;
    state.counters["timed_runs"] = t.timed_runs;
    state.counters["warmup_runs"] = t.warmup_runs;
    state.counters["rel_error"] = c.relative_error;
    if (v == Variant::CublasSgemm)
      g_bench->sgemm_median[s.name()] = t.median;
    if (v == Variant::CublasChain)
      g_bench->chain_median[s.name()] = t.median;
    if (auto it = g_bench->sgemm_median.find(s.name()); it != g_bench->sgemm_median.end())
      state.counters["ratio_vs_sgemm"] = t.median / it->second;
    if (auto it = g_bench->chain_median.find(s.name()); it != g_bench->chain_median.end())
      state.counters["ratio_vs_chain"] = t.median / it->second;
    if (kernel) {
      state.counters["ptx_compile_ms"] = kernel->ptx_compile_ms;
      if (kernel->ptxas) {
        int registers = 0, spills = 0, shared = 0;
        for (const KernelResources &k : kernel->ptxas->kernels) {
          registers = std::max(registers, k.registers);
          spills += k.spill_store_bytes + k.spill_load_bytes;
          shared = std::max(shared, k.shared_bytes);
        }
        state.counters["registers"] = registers;
        state.counters["spill_bytes"] = spills;
        state.counters["shared_bytes"] = shared;
      }
      state.SetLabel(kernel->tiling.str());
    }
  } catch (const std::exception &error) {
    std::string message = std::string(variant_name(v)) + " " + s.name() + ": " + error.what();
    std::fprintf(stderr, "coalesce-bench: ERROR: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
  }
}

// ------------------------------------------------------------ command line

[[noreturn]] void usage_error(const std::string &message) {
  std::fprintf(stderr,
               "coalesce-bench: %s\n"
               "usage: coalesce-bench [--shapes=LIST] [Google Benchmark flags]\n"
               "  LIST: comma-separated MxNxK or aliases 1024, 2048, 4096, 8192, ragged, llama, all\n",
               message.c_str());
  std::exit(2);
}

std::vector<Shape> parse_shapes(const std::string &list) {
  std::vector<Shape> shapes;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (item.empty())
      continue;
    if (item == "all") {
      for (const auto &named : kShapes)
        shapes.push_back(named.second);
      continue;
    }
    bool found = false;
    for (const auto &named : kShapes)
      if (item == named.first || item == named.second.name()) {
        shapes.push_back(named.second);
        found = true;
      }
    if (found)
      continue;
    int M = 0, N = 0, K = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%dx%dx%d%c", &M, &N, &K, &tail) != 3 || M <= 0 || N <= 0 || K <= 0)
      usage_error("bad shape '" + item + "'");
    const int64_t limit = int64_t(1) << 31;
    if (int64_t(M) * K >= limit || int64_t(K) * N >= limit || int64_t(M) * N >= limit)
      usage_error("shape '" + item + "' has a matrix of 2^31 elements or more");
    shapes.push_back({M, N, K});
  }
  if (shapes.empty())
    usage_error("no shape selected");
  return shapes;
}

} // namespace

int main(int argc, char **argv) {
  // Our own flag first; the rest goes to Google Benchmark.
  std::string shape_list = "all";
  std::vector<char *> rest;
  for (int a = 0; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg.rfind("--shapes=", 0) == 0)
      shape_list = arg.substr(9);
    else if (arg == "--shapes" && a + 1 < argc)
      shape_list = argv[++a];
    else
      rest.push_back(argv[a]);
  }
  std::vector<Shape> shapes = parse_shapes(shape_list);
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data()))
    return 2;

  std::string why_no_gpu;
  if (!gpu::gpu_available(&why_no_gpu)) {
    std::printf("coalesce-bench: no GPU (%s): nothing measured\n", why_no_gpu.c_str());
    return 0;
  }

  try {
    gpu::Device &device = gpu::Device::get();
    Bench bench;
    size_t flush_bytes = std::max<size_t>(2 * static_cast<size_t>(device.l2_bytes()), size_t(256) << 20);
    bench.flush = gpu::DeviceBuffer(flush_bytes);
    g_bench = &bench;
    benchmark::AddCustomContext("gpu", device.name());
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(device.sm_count()));
    benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(device.l2_bytes()));
    benchmark::AddCustomContext("gpu_target", target_for_current_device().sm());
    benchmark::AddCustomContext("l2_flush_bytes", std::to_string(flush_bytes));
    benchmark::AddCustomContext("protocol", "poisoned-output check vs cuBLAS (tol 1e-4), >=300 ms warm-up, " +
                                                std::to_string(kMinTimedRuns) + ".." + std::to_string(kMaxTimedRuns) +
                                                " timed runs between CUDA events, L2 flushed before each; "
                                                "time = median");

    for (const Shape &s : shapes)
      for (Variant v : kVariants)
        benchmark::RegisterBenchmark((std::string(variant_name(v)) + "/" + s.name()).c_str(), run_benchmark, s, v)
            ->UseManualTime()
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    g_data.reset();
    g_bench = nullptr;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "coalesce-bench: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
