// coalesce-bench: Coalesce's GEMM (alone, and fused with bias + GELU)
// against cuBLAS, the cuBLAS chain (GEMM, then a bias + GELU kernel) and
// cuBLASLt's fused GELU_BIAS epilogue, per precision, on the GPU, with Google
// Benchmark.
//
//   out(i, j) = gelu(sum_k A(i, k) * B(k, j) + bias(j))     row-major
//
// Precisions (bench/common/Precisions.h): fp32 (f32 everywhere), tf32 (f32
// data, tensor cores round the inputs to tf32), bf16 and f16 (16-bit A, B and
// output; f32 accumulation). Variants, in the order they run for each
// precision and shape (all on the same buffers):
//   cublas_gemm         A * B: cublasSgemm (true FP32) for fp32, else cublasGemmEx
//   cublas_chain        cublas_gemm into the output type, then the bias + exact-GELU kernel
//   cublaslt_gelu_bias  cuBLASLt, CUBLASLT_EPILOGUE_GELU_BIAS (tanh GELU)
//   coalesce_gemm       make_gemm(Epilogue::None), coalesce_fused with bias + GELU:
//   coalesce_fused        fp32: the FFMA schedule (schedule_gemm, default_gemm_tiling);
//                         tf32/bf16/f16: the tensor-core schedule (schedule_gemm_mma,
//                         bench::mma_tiling for the shape): on sm_90a
//                         the warpgroup MMA for bf16 and f16, with row-padded
//                         copies where K or N is not a multiple of 8
//                         (bench::prefers_warpgroup_mma; COALESCE_BENCH_WARP_MMA=1:
//                         always the warp MMA); COALESCE_BENCH_TF32=truncated: tf32 on
//                         the truncating kinds (A and B as they lie, no rounding copies);
//                         COALESCE_BENCH_SPLIT_K_MODE=deterministic|atomic|combine-kernel:
//                         that combine wherever the tiling splits K
//                       with --tuning-db=PATH (or COALESCE_TUNING_DB), the tiling
//                       the tuning database records for the problem on this GPU
//                       (docs/tuning.md), where it has one
//
// Protocol (shared/BENCH.md), for every (precision, variant, shape):
//   1. correctness: the output is poisoned (NaN), the variant runs once, every
//      element must be finite and ||out - ref|| / ||ref|| within
//      bench::tolerance for the variant, where ref is cuBLAS's GEMM of the
//      precision with an f32 output (itself checked against a double product
//      on sampled rows), plus bias and the erf GELU (tanh for cuBLASLt) in
//      double (bench/harness/Problem.h). coalesce_fused is also run and
//      checked at K = 1 and K = 3 against a double reference. A failure
//      skips the benchmark with an error (state.SkipWithError).
//   2. warm-up: the variant runs back to back for at least 300 ms.
//   3. at least 30 timed runs (more for short kernels, up to 200, about
//      250 ms in all), each between its own pair of CUDA events, with the L2
//      flushed before each (a buffer of max(2 x L2, 256 MiB) written with
//      cuMemsetD8).
// Google Benchmark runs each benchmark for one iteration holding all the
// timed runs, and its (manual) time is their median. Counters: median_ms,
// min_ms, max_ms, TFLOPs (2*M*N*K / median), ratio_vs_gemm (median over the
// cublas_gemm median of the same precision and shape in this run),
// ratio_vs_chain, rel_error, tolerance, timed_runs, and for Coalesce's
// variants ptx_compile_ms (of the first compile of that kernel: shapes with
// the same tiling share it), registers, spill_bytes, shared_bytes.
// Benchmark names are <precision>/<variant>/<shape>.
//
// Usage: coalesce-bench [--precisions=LIST] [--shapes=LIST] [Google Benchmark flags]
//   precisions: comma-separated fp32, tf32, bf16, f16, or all (default)
//   shapes: comma-separated, each MxNxK or an alias: 1024, 2048, 4096, 8192
//   (cubes), ragged (4093x4091x4097), llama (8192x11008x4096), m16
//   (16x4096x4096), m64 (64x11008x4096), all (default), heldout, decode (M in
//   1, 8, 16, 32, 64 against nn.Linear weights of 4096 x 4096, 11008 x 4096
//   and 8192 x 8192, B stored N x K); the suffix _nk on any of them stores B
//   N x K (out = A B^T: cuBLAS with its transposed operand, ours reading
//   B(j, k)). Counters include GBps: the bytes A, B, the bias and the output
//   must move, over the median time.
//   e.g. --precisions=bf16 --shapes=4096 --benchmark_out=bench.json --benchmark_out_format=json
// Without a GPU it says why and exits 0 (CI builds and runs it there).

#include "bench/common/GemmPointers.h"
#include "bench/common/Precisions.h"
#include "bench/harness/Problem.h"
#include "bench/reference/CublasReference.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Gemm.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GemmCandidate.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"
#include "runtime/GpuTiming.h"
#include "runtime/TuningDatabase.h"
#include "runtime/Version.h"
#include "scheduler/SpecializeSizes.h"

#include <benchmark/benchmark.h>

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace coalesce;
using namespace coalesce::bench;
using examples::Epilogue;

// ------------------------------------------------------------------ settings

// The timing protocol is runtime/GpuTiming.h's benchmark_timing(): at least
// 300 ms of warm-up, then 30 to 200 timed runs, about 250 ms of them: with
// the warm-up, the check and the compile, every precision at every shape
// stays short: the 160 benchmarks of eight shapes took about 8 minutes on an
// H200 (220 with the three deep-K shapes, not yet timed).

const std::vector<std::pair<std::string, Shape>> kShapes = {
    {"1024", {1024, 1024, 1024}},   {"2048", {2048, 2048, 2048}},     {"4096", {4096, 4096, 4096}},
    {"8192", {8192, 8192, 8192}},   {"ragged", {4093, 4091, 4097}},   {"llama", {8192, 11008, 4096}},
    {"m16", {16, 4096, 4096}},      {"m64", {64, 11008, 4096}},
    // Deep reductions on few output tiles: the default splits K across blocks.
    {"k16k", {128, 4096, 16384}},   {"k32k", {512, 512, 32768}},     {"k64k", {256, 256, 65536}},
};

// A decode step's GEMMs (--shapes=decode, not in `all`): a few rows of
// activations against an nn.Linear weight stored N x K, memory-bound (the
// weight is read once); Llama-style projections.
const std::vector<Shape> kDecodeShapes = [] {
  std::vector<Shape> shapes;
  for (auto [N, K] : {std::pair{4096, 4096}, std::pair{11008, 4096}, std::pair{8192, 8192}})
    for (int M : {1, 8, 16, 32, 64})
      shapes.push_back({M, N, K, true});
  return shapes;
}();

// Ten shapes no default was tuned on (--shapes=heldout, not in `all`):
// LLM projections (Llama-3 8B's MLP up and down, a fused QKV, a grouped-
// query KV, 13B's attention, a 1.5B MLP), mid-size and large squares, and
// two that are not multiples of any tile: the held-out geometric mean of
// docs/performance.md is taken over them.
const std::vector<Shape> kHeldOutShapes = {
    {4096, 14336, 4096}, {4096, 4096, 14336}, {4096, 12288, 4096}, {4096, 1024, 4096}, {2048, 5120, 5120},
    {1536, 8960, 1536},  {3072, 3072, 3072},  {6144, 6144, 6144},  {4000, 4000, 4000}, {5000, 3000, 2000},
};

enum class Variant { CublasGemm, CublasChain, CublasLt, CoalesceGemm, CoalesceFused };
const Variant kVariants[] = {Variant::CublasGemm, Variant::CublasChain, Variant::CublasLt, Variant::CoalesceGemm,
                             Variant::CoalesceFused};

const char *variant_name(Variant v) {
  switch (v) {
  case Variant::CublasGemm:
    return "cublas_gemm";
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

/// What the variant computes, and which tolerance its check uses.
Function variant_function(Variant v) {
  switch (v) {
  case Variant::CublasGemm:
  case Variant::CoalesceGemm:
    return Function::Gemm;
  case Variant::CublasLt:
    return Function::GeluTanh;
  default:
    return Function::GeluErf;
  }
}

Comparison variant_comparison(Variant v) {
  switch (v) {
  case Variant::CublasGemm:
    return Comparison::GemmVsCublas;
  case Variant::CublasChain:
    return Comparison::ChainVsCublas;
  case Variant::CublasLt:
    return Comparison::LtVsCublas;
  default:
    return Comparison::OursVsCublas;
  }
}

// ------------------------------------------------------------ shared state

/// Device-wide state: the flush buffer, and the medians measured so far.
struct Bench {
  gpu::DeviceBuffer flush;
  std::map<std::string, double> gemm_median, chain_median; // by Problem::key()
};
Bench *g_bench = nullptr;

/// Only one problem is held at a time (benchmarks run in the order they were
/// registered: precision by precision within a shape).
std::unique_ptr<Problem> g_problem;

Problem &problem_for(Precision p, const Shape &s) {
  if (!g_problem || g_problem->precision() != p || g_problem->shape().name() != s.name()) {
    g_problem.reset(); // free the previous problem's buffers first
    g_problem = std::make_unique<Problem>(p, s);
  }
  return *g_problem;
}

// ------------------------------------------------------------------- timing

struct Timing {
  double median = 0, min = 0, max = 0;
  int warmup_runs = 0, timed_runs = 0;
};

Timing time_runs(const std::function<void()> &run, gpu::DeviceBuffer &flush) {
  GpuTiming g = time_gpu_runs(run, flush, benchmark_timing()); // runtime/GpuTiming.h: the protocol above
  Timing t;
  t.median = g.median_ms;
  t.min = g.min_ms;
  t.max = g.max_ms;
  t.warmup_runs = g.warmup_runs;
  t.timed_runs = g.timed_runs;
  return t;
}

// --------------------------------------------------------------- benchmark

/// One of Coalesce's kernels, compiled and loaded. The kernels take M, N and
/// K at run time, so one compile serves every shape that picks the same
/// tiling (kept for the whole run; see compiled_kernel).
struct CompiledKernel {
  examples::Gemm gemm;
  std::unique_ptr<Pipeline> pipeline;
  const GpuExecutable *executable = nullptr;
  std::string tiling;
  double ptx_compile_ms = 0;
  std::optional<PtxasResult> ptxas;
};

/// A compiled kernel bound to one problem's buffers.
struct CoalesceKernel {
  const CompiledKernel *compiled = nullptr;
  std::vector<CUdeviceptr> pointers;
};

/// --tuning-db (or COALESCE_TUNING_DB): the database Coalesce's kernels take
/// their tiling from, loaded once before anything is timed; null: none.
const TuningDatabase *g_tuning_db = nullptr;
std::string g_tuning_db_path;

/// The problem the tuning database keys on for this benchmark.
GemmProblem tuning_problem(Epilogue epilogue, Precision p, const Shape &s) {
  GemmProblem problem;
  problem.dtype = p == Precision::FP32 ? "f32" : reference::precision_name(p);
  problem.out_dtype = output_type(p) == BFloat(16) ? "bf16" : output_type(p) == Float(16) ? "f16" : "f32";
  problem.epilogue = examples::epilogue_name(epilogue);
  problem.M = s.M;
  problem.N = s.N;
  problem.K = s.K;
  problem.b_layout = s.b_nk ? GemmBLayout::NK : GemmBLayout::KN;
  return problem;
}

/// The database's schedule for the problem, if it has one (that shape, else
/// its shape class) for this GPU; a note on stderr either way, once per problem.
std::optional<GemmCandidate> tuned_candidate(Epilogue epilogue, Precision p, const Shape &s) {
  if (!g_tuning_db)
    return std::nullopt;
  static std::set<std::string> noted;
  GemmProblem problem = tuning_problem(epilogue, p, s);
  std::string sm = target_for_current_device().sm();
  std::optional<TuningMatch> match = g_tuning_db->find(problem, sm, gpu::Device::get().name());
  if (noted.insert(problem.str()).second)
    std::fprintf(stderr, "coalesce-bench: %s\n",
                 match ? (problem.str() + ": the tuning database's " + (match->exact ? "entry" : "nearest entry") +
                          " for " + match->record->problem.shape() + ": " + match->record->schedule.str())
                             .c_str()
                       : tuning_fallback_note(g_tuning_db_path, problem, sm).c_str());
  if (!match)
    return std::nullopt;
  // A nearest entry's tiling, made for another shape, pads where this one's
  // rows need it (as apply_gemm_candidate does): the kernel cache's key is
  // its description.
  GemmCandidate candidate = match->record->schedule;
  if (candidate.family != GemmFamily::Ffma)
    use_tma_copies_where_needed(candidate.mma, s.M, s.N, s.K, false, s.b_nk);
  return candidate;
}

const CompiledKernel &compiled_kernel(Epilogue epilogue, Precision p, const Shape &s) {
  // Never destroyed: unloading modules during exit would race the CUDA
  // runtime's own teardown.
  static auto *cache = new std::map<std::string, std::unique_ptr<CompiledKernel>>();
  const int sm_count = gpu::Device::get().sm_count();
  std::optional<MmaTiling> mma;
  std::optional<GemmTiling> ffma;
  std::string tiling;
  std::optional<GemmCandidate> tuned = tuned_candidate(epilogue, p, s);
  if (tuned) {
    tiling = tuned->str();
  } else if (uses_tensor_cores(p)) {
    // Hopper's warpgroup MMA where the GPU has it (tf32, bf16, f16), else the
    // warp MMA; COALESCE_BENCH_WARP_MMA=1 keeps the warp MMA to compare.
    const char *warp_only = std::getenv("COALESCE_BENCH_WARP_MMA");
    bool warpgroup = prefers_warpgroup_mma(p, s.M, s.N, s.K) && target_for_current_device().has_warpgroup_mma() &&
                     !(warp_only && std::string(warp_only) == "1");
    mma = mma_tiling_for_shape(p, s.M, s.N, s.K, sm_count, warpgroup, s.b_nk);
    // COALESCE_BENCH_TF32=truncated: tf32 on the truncating kinds (the f32
    // bits as the tensor cores read them).
    if (p == Precision::TF32 && bench_tf32_truncated())
      mma = default_mma_tiling(warpgroup ? MmaKind::TF32Truncated_wgmma_m64k8 : MmaKind::TF32Truncated_m16n8k8, s.M,
                               s.N, s.K, sm_count, false, s.b_nk);
    // A few rows of x: swap-AB, as the library's default does;
    // COALESCE_BENCH_NO_SWAP=1 keeps x's rows along M, to compare.
    const char *no_swap = std::getenv("COALESCE_BENCH_NO_SWAP");
    if (!(no_swap && std::string(no_swap) == "1"))
      swap_ab_where_rows_are_few(*mma, s.M, s.N, s.K, sm_count);
    // COALESCE_BENCH_SPLIT_K_MODE: the split's combine, to compare (the
    // library's default takes the combine kernel for warpgroup tiles).
    if (std::optional<SplitKMode> mode = bench_split_k_mode(); mode && mma->split_k > 1)
      mma->split_k_mode = *mode;
    tiling = mma->str();
  } else {
    ffma = default_gemm_tiling(s.M, s.N, s.K, sm_count);
    tiling = ffma->str();
  }
  // A launch at s runs the program specialized for its sizes that are
  // multiples of 16, 8 or 4 (Pipeline::gpu_executable): that kernel's PTX is the
  // one timed, compiled and reported, so shapes of one tiling share a
  // compiled kernel only where they share those sizes.
  SizeMultiples multiples = specializable_sizes({{"M", s.M}, {"N", s.N}, {"K", s.K}});
  const std::string aligned = multiples.empty() ? "" : "/specialized: " + specialization_name(multiples);
  const std::string key = std::string(reference::precision_name(p)) + "/" + examples::epilogue_name(epilogue) +
                          (s.b_nk ? "/nk/" : "/") + tiling + aligned;
  std::unique_ptr<CompiledKernel> &kernel = (*cache)[key];
  if (kernel)
    return *kernel;
  auto k = std::make_unique<CompiledKernel>(
      CompiledKernel{examples::make_gemm(epilogue, input_type(p), output_type(p),
                                         s.b_nk ? examples::BLayout::NK : examples::BLayout::KN),
                     nullptr, nullptr, tiling, 0, {}});
  examples::Gemm &g = k->gemm;
  if (tuned)
    apply_gemm_candidate(tuning_problem(epilogue, p, s), *tuned, g.out, g.acc, g.A, g.B, g.i, g.j, g.k);
  else if (mma)
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, *mma);
  else
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, *ffma);
  k->pipeline = std::make_unique<Pipeline>(g.out);
  GpuTarget target = target_for_current_device();
  auto start = std::chrono::steady_clock::now();
  const std::string &ptx =
      multiples.empty() ? k->pipeline->ptx(target) : k->pipeline->specialized_ptx(target, multiples);
  k->ptx_compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (ptxas_available()) {
    try {
      k->ptxas = assemble_ptx(ptx, target);
    } catch (const UserError &error) {
      std::fprintf(stderr, "coalesce-bench: ptxas report unavailable: %s\n", error.what());
    }
    // A warpgroup-MMA kernel ptxas degrades is a failure, not a figure.
    std::vector<std::string> losses = k->ptxas ? k->ptxas->performance_losses() : std::vector<std::string>();
    if (!losses.empty() && ptx_has_warpgroup_mma(ptx))
      user_error("ptxas reports a performance loss in the warpgroup-MMA kernel: ", losses.front());
  }
  k->executable = &k->pipeline->gpu_executable(target);
  kernel = std::move(k);
  return *kernel;
}

std::unique_ptr<CoalesceKernel> bind_coalesce(Epilogue epilogue, Problem &d) {
  auto kernel = std::make_unique<CoalesceKernel>();
  kernel->compiled = &compiled_kernel(epilogue, d.precision(), d.shape());
  kernel->pointers = gemm_pointers(*kernel->compiled->executable, d.A_dev.ptr(), d.B_dev.ptr(), d.bias_dev.ptr(),
                                   d.out_dev.ptr());
  return kernel;
}

void run_benchmark(benchmark::State &state, Precision p, Shape s, Variant v) {
  const std::string what = std::string(reference::precision_name(p)) + " " + variant_name(v) + " " + s.name();
  try {
    Problem &d = problem_for(p, s);
    const void *A = d.A_dev.as<void>(), *B = d.B_dev.as<void>(), *bias_out = d.bias_out_dev.as<void>();
    const float *bias = d.bias_dev.as<float>();
    void *out = d.out_dev.as<void>(), *tmp = d.tmp_dev.as<void>();
    std::function<void()> run;
    std::unique_ptr<CoalesceKernel> kernel;
    std::map<std::string, int64_t> params{{"M", s.M}, {"N", s.N}, {"K", s.K}};
    switch (v) {
    case Variant::CublasGemm:
      run = [=] { reference::gemm(p, s.M, s.N, s.K, A, B, out, /*f32_output=*/false, s.b_nk); };
      break;
    case Variant::CublasChain:
      run = [=] { reference::chain(p, s.M, s.N, s.K, A, B, bias, tmp, out, s.b_nk); };
      break;
    case Variant::CublasLt:
      run = [=] { reference::lt_gelu_bias(p, s.M, s.N, s.K, A, B, bias_out, out, s.b_nk); };
      break;
    case Variant::CoalesceGemm:
    case Variant::CoalesceFused:
      kernel = bind_coalesce(v == Variant::CoalesceGemm ? Epilogue::None : Epilogue::BiasGelu, d);
      run = [&, k = kernel.get()] { k->compiled->executable->launch(k->pointers, params); };
      break;
    }

    // 1. Correctness, before any timing.
    if (!d.reference_error().empty()) {
      std::fprintf(stderr, "coalesce-bench: CHECK FAILED: %s: %s\n", what.c_str(), d.reference_error().c_str());
      state.SkipWithError(d.reference_error().c_str());
      return;
    }
    d.run_poisoned(run);
    Check c = d.check_against_reference(variant_function(v), variant_comparison(v));
    std::string failure;
    if (!c.ok())
      failure = what + ": " + c.describe();
    if (failure.empty() && v == Variant::CoalesceFused) {
      // A fused epilogue must run after the whole reduction: K = 1 and K = 3.
      for (int K : {1, 3}) {
        std::map<std::string, int64_t> small{{"M", s.M}, {"N", s.N}, {"K", K}};
        d.run_poisoned([&] { kernel->compiled->executable->launch(kernel->pointers, small); });
        Check ck = d.check_small_k(K);
        if (!ck.ok()) {
          failure = what + " at K=" + std::to_string(K) + ": " + ck.describe();
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
    state.counters["GBps"] = s.bytes(reference::input_bytes(p), reference::output_bytes(p)) / (t.median * 1e-3) / 1e9;
    state.counters["timed_runs"] = t.timed_runs;
    state.counters["warmup_runs"] = t.warmup_runs;
    state.counters["rel_error"] = c.relative_error;
    state.counters["tolerance"] = c.tolerance;
    if (v == Variant::CublasGemm)
      g_bench->gemm_median[d.key()] = t.median;
    if (v == Variant::CublasChain)
      g_bench->chain_median[d.key()] = t.median;
    if (auto it = g_bench->gemm_median.find(d.key()); it != g_bench->gemm_median.end())
      state.counters["ratio_vs_gemm"] = t.median / it->second;
    if (auto it = g_bench->chain_median.find(d.key()); it != g_bench->chain_median.end())
      state.counters["ratio_vs_chain"] = t.median / it->second;
    if (kernel) {
      const CompiledKernel &compiled = *kernel->compiled;
      state.counters["ptx_compile_ms"] = compiled.ptx_compile_ms;
      if (compiled.ptxas) {
        int registers = 0, spills = 0, shared = 0;
        for (const KernelResources &k : compiled.ptxas->kernels) {
          registers = std::max(registers, k.registers);
          spills += k.spill_store_bytes + k.spill_load_bytes;
          shared = std::max(shared, k.shared_bytes);
        }
        state.counters["registers"] = registers;
        state.counters["spill_bytes"] = spills;
        state.counters["shared_bytes"] = shared;
      }
      state.SetLabel(compiled.tiling);
    }
  } catch (const std::exception &error) {
    std::string message = what + ": " + error.what();
    std::fprintf(stderr, "coalesce-bench: ERROR: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
  }
}

// ------------------------------------------------------------ command line

[[noreturn]] void usage_error(const std::string &message) {
  std::fprintf(stderr,
               "coalesce-bench: %s\n"
               "usage: coalesce-bench [--precisions=LIST] [--shapes=LIST] [Google Benchmark flags]\n"
               "  precisions: comma-separated fp32, tf32, bf16, f16, or all\n"
               "  shapes: comma-separated MxNxK or aliases 1024, 2048, 4096, 8192, ragged, llama, m16, m64, k16k,\n"
               "          k32k, k64k, splitk (m16, m64, k16k, k32k, k64k), all, heldout (ten more shapes, not in\n"
               "          all: LLM projections, squares, ragged), decode (M of 1 to 64 against nn.Linear weights,\n"
               "          B stored N x K); any of them with the suffix _nk: B stored N x K\n",
               message.c_str());
  std::exit(2);
}

std::vector<Shape> parse_shapes(const std::string &list) {
  std::vector<Shape> shapes;
  for (std::string item : split_list(list)) {
    // "_nk": the item's shapes with B stored N x K.
    const size_t first = shapes.size();
    const bool b_nk = item.size() > 3 && item.compare(item.size() - 3, 3, "_nk") == 0;
    if (b_nk)
      item.resize(item.size() - 3);
    struct MarkNk {
      std::vector<Shape> &shapes;
      size_t first;
      bool b_nk;
      ~MarkNk() {
        for (size_t n = first; n < shapes.size(); ++n)
          shapes[n].b_nk = shapes[n].b_nk || b_nk;
      }
    } mark{shapes, first, b_nk};
    if (item == "decode") {
      for (const Shape &s : kDecodeShapes)
        shapes.push_back(s);
      continue;
    }
    if (item == "all") {
      for (const auto &named : kShapes)
        shapes.push_back(named.second);
      continue;
    }
    if (item == "heldout") {
      shapes.insert(shapes.end(), kHeldOutShapes.begin(), kHeldOutShapes.end());
      continue;
    }
    if (item == "splitk") { // the five shapes the default splits K for
      for (const char *alias : {"m16", "m64", "k16k", "k32k", "k64k"})
        for (const auto &named : kShapes)
          if (named.first == alias)
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
  // Our own flags through llvm::cl, as coalesce-aot's; what it does not know
  // (--benchmark_*) is sunk and handed to Google Benchmark, which reports
  // anything it does not know either.
  namespace cl = llvm::cl;
  cl::OptionCategory category("coalesce-bench options");
  cl::opt<std::string> shapes_flag("shapes", cl::desc("comma-separated shapes to time, or all"),
                                   cl::value_desc("list"), cl::init("all"), cl::cat(category));
  cl::opt<std::string> precisions_flag("precisions", cl::desc("comma-separated fp32, tf32, bf16, f16, or all"),
                                       cl::value_desc("list"), cl::init("all"), cl::cat(category));
  const char *tuning_env = std::getenv("COALESCE_TUNING_DB");
  cl::opt<std::string> tuning_db_flag(
      "tuning-db", cl::desc("take Coalesce's tilings from this tuning database (docs/tuning.md), where it has an "
                            "entry for the problem and this GPU (default: $COALESCE_TUNING_DB)"),
      cl::value_desc("path"), cl::init(tuning_env ? tuning_env : ""), cl::cat(category));
  cl::list<std::string> benchmark_flags(cl::Sink, cl::desc("Google Benchmark's --benchmark_* flags"),
                                        cl::cat(category));
  cl::HideUnrelatedOptions(category);
  std::string errors;
  llvm::raw_string_ostream error_stream(errors);
  print_version_as("coalesce-bench");
  if (!cl::ParseCommandLineOptions(argc, argv, "the fused GEMM + bias + GELU against cuBLAS / cuBLASLt.\n",
                                   &error_stream))
    usage_error(without_program_prefix(llvm::StringRef(errors).trim().str(), argv[0]));
  std::string shape_list = shapes_flag, precision_list = precisions_flag;
  std::vector<char *> rest = {argv[0]};
  for (std::string &flag : benchmark_flags)
    rest.push_back(flag.data());
  std::vector<Shape> shapes = parse_shapes(shape_list);
  std::string precision_error;
  std::vector<Precision> precisions = parse_precisions(precision_list, &precision_error);
  if (precisions.empty())
    usage_error(precision_error);
  std::string split_mode_error;
  bench_split_k_mode(&split_mode_error);
  if (!split_mode_error.empty())
    usage_error(split_mode_error);
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data()))
    return 2;

  // Read (and checked) before anything runs: a corrupted database stops here.
  std::optional<TuningDatabase> tuning_db;
  g_tuning_db_path = tuning_db_flag;
  if (!g_tuning_db_path.empty()) {
    try {
      tuning_db = TuningDatabase::load(g_tuning_db_path);
    } catch (const UserError &error) {
      std::fprintf(stderr, "coalesce-bench: %s\n", error.what());
      return 2;
    }
    g_tuning_db = &*tuning_db;
  }

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
    if (g_tuning_db)
      benchmark::AddCustomContext("tuning_db", g_tuning_db_path);
    benchmark::AddCustomContext("protocol", "poisoned-output check vs cuBLAS of the same precision (f32-output GEMM, "
                                            "epilogue in double; per-variant tolerance), >=300 ms warm-up, " +
                                                std::to_string(benchmark_timing().min_timed_runs) + ".." +
                                                std::to_string(benchmark_timing().max_timed_runs) +
                                                " timed runs between CUDA events, L2 flushed before each; "
                                                "time = median");

    for (const Shape &s : shapes)
      for (Precision p : precisions)
        for (Variant v : kVariants)
          benchmark::RegisterBenchmark(
              (std::string(reference::precision_name(p)) + "/" + variant_name(v) + "/" + s.name()).c_str(),
              run_benchmark, p, s, v)
              ->UseManualTime()
              ->Iterations(1)
              ->Unit(benchmark::kMillisecond);

    auto started = std::chrono::steady_clock::now();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    std::fprintf(stderr, "coalesce-bench: %.0f s in all\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    g_problem.reset();
    g_bench = nullptr;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "coalesce-bench: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
