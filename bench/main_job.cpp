// coalesce-main: the fused GEMM + bias + GELU end to end (scripts/main_job.sh).
//
//   out(i, j) = gelu(sum_k A(i, k) * B(k, j) + bias(j))     row-major
//
// A, B and out are FP32, or with --dtype=bf16|f16 that 16-bit type (bias
// stays FP32). The arithmetic is FP32 either way: the 16-bit inputs are
// widened exactly and the same FP32 schedule runs (FFMA, no tensor cores),
// and the result is rounded once to the output type.
//
// 1. declares the algorithm and its schedule and prints the loop nest;
// 2. compiles it to PTX for sm_90a, reporting the schedule-to-PTX time and
//    what ptxas says of it (registers, shared memory, spills);
// 3. with a GPU: runs it at M x N x K (4096^3 unless --M/--N/--K say
//    otherwise), checks it, times it with CUDA events (a warm-up of at least
//    300 ms, then timed iterations with the L2 flushed before each, median
//    reported) and compares it with cuBLAS of the same precision (bf16,
//    f16, tf32 on tensor cores, else FP32) on the same buffers, when the
//    cuBLAS reference was built: its GEMM alone (the ratio printed first),
//    the chain (GEMM, then bias + GELU) and cuBLASLt's GELU_BIAS;
//    without a GPU: runs it on the CPU at a small ragged shape and checks it
//    against a double-precision reference.
//
// --autotune searches the tiling on the GPU first (runtime/TuneGemm.h) and
// --tuning-db=PATH records the winner there, or, alone, reads the tiling
// recorded for the problem (docs/tuning.md).
//
// Exit status: 0 when every check passed, 1 when a check or a step failed,
// 2 for a bad command line.

#include "bench/MainJobOptions.h"
#include "bench/common/GemmPointers.h"
#include "bench/common/Precisions.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuCandidateTiming.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"
#include "runtime/TuneGemm.h"
#include "runtime/TuneProgress.h"
#include "runtime/Version.h"
#include "scheduler/SpecializeSizes.h"

#ifdef COALESCE_HAVE_CUBLAS
#include "bench/reference/CublasReference.h"
#endif

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace coalesce;
using namespace coalesce::main_job;

constexpr double kWarmupMs = 300;
constexpr int kTimedIterations = 50;
/// ||ours - ref|| / ||ref|| above this fails the run: FP32 sums of K
/// products; for a 16-bit output, twice its rounding (half an ulp is 2^-9
/// of the value for bf16, 2^-11 for f16).
double tolerance_for(Type out, bool tf32_inputs) {
  // tf32 rounds each input to 11 significant bits: a product is off by up
  // to 2^-10 of itself.
  if (tf32_inputs)
    return 0x1p-10;
  if (out == BFloat(16))
    return 0x1p-8;
  if (out == Float(16))
    return 0x1p-10;
  return 1e-4;
}

// ---------------------------------------------------------------- algorithm

/// The algorithm, written once; the schedule is applied separately. A, B
/// and out have element type `dtype`; a 16-bit A and B are widened to FP32
/// by the arithmetic, and the FP32 result is rounded once to out's type.
struct FusedGemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A, B;
  Input bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Func acc{"acc"}, out{"out"};

  explicit FusedGemm(Type dtype) : A("A", dtype, {M, K}), B("B", dtype, {K, N}) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = cast(dtype, gelu(acc(i, j) + bias(j)));
  }
};

/// The schedule the main job runs. 64x64 output tiles, one per GPU block;
/// 16x16 threads per block, each computing a 4x4 register block; the
/// reduction split by 8, with the A and B tiles of each K step staged in
/// shared memory; bias + GELU fused after the reduction, on the register
/// tile. The same schedule for every shape for now.
void apply_default_schedule(FusedGemm &g, const Shape &shape, bool tensor_cores, bool warpgroup, Type dtype,
                            const std::vector<int> &knobs, int block_groups, const WgmmaKnobs &wgmma,
                            const FfmaKnobs &ffma) {
  // The tilings fill the GPU's multiprocessors: this machine's GPU, or
  // without one the default target's (the PTX below is for it).
  const int sm_count = gpu::sm_count_for(GpuTarget());
  if (tensor_cores) {
    // Warp MMA (dsl/recipes/GemmMmaSchedule.h): bf16/f16 inputs on their
    // instruction, f32 inputs rounded to tf32; with `warpgroup`, on
    // Hopper's warpgroup MMA.
    MmaKind kind = mma_kind_for(dtype, warpgroup);
    MmaTiling tiling = default_mma_tiling(kind, shape.M, shape.N, sm_count);
    // A few rows of A (--M of 64 or fewer): swap-AB, as the library's
    // default does; --mma-tiling's tiles keep A's rows along M.
    if (knobs.empty())
      swap_ab_where_rows_are_few(tiling, shape.M, shape.N, shape.K, sm_count);
    if (knobs.size() >= 6) {
      tiling.block_m = knobs[0];
      tiling.block_n = knobs[1];
      tiling.warp_m = knobs[2];
      tiling.warp_n = knobs[3];
      tiling.k_step = knobs[4];
      tiling.min_blocks_per_sm = knobs[5];
      if (knobs.size() == 7)
        tiling.stages = knobs[6];
    }
    if (block_groups >= 0)
      tiling.block_group_rows = block_groups;
    if (wgmma.cp_async)
      tiling.tma = false;
    if (wgmma.producer_warps >= 0)
      tiling.producer_warps = wgmma.producer_warps;
    if (wgmma.producer_registers >= 0)
      tiling.producer_registers = wgmma.producer_registers;
    if (wgmma.persistent_blocks >= 0)
      tiling.persistent_blocks = wgmma.persistent_blocks;
    if (wgmma.cluster_blocks >= 0)
      tiling.cluster_blocks = wgmma.cluster_blocks;
    if (wgmma.split_k >= 1)
      tiling.split_k = wgmma.split_k;
    if (wgmma.split_k_tail >= 0)
      tiling.split_k_tail_rows = wgmma.split_k_tail;
    tiling.consumer_schedule = wgmma.consumer_schedule;
    if (wgmma.tile_stores)
      tiling.tile_stores = *wgmma.tile_stores;
    else if (tiling.consumer_schedule == ConsumerSchedule::PingPong)
      tiling.tile_stores = TileStores::Direct; // ping-pong's groups would share a staged tile
    else
      stage_values_where_sums_do_not_fit(tiling);
    if (knobs.size() < 7) // the stages are the tiling's: those that fit beside the knobs' output tile
      fit_output_tile_beside_stages(tiling);
    use_tma_copies_where_needed(tiling, shape.M, shape.N, shape.K);
    std::printf("schedule: %s\n", tiling.str().c_str());
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
    return;
  }
  // The library's shape-aware GEMM schedule (dsl/recipes/GemmSchedule.h).
  GemmTiling tiling = default_gemm_tiling(shape.M, shape.N, shape.K, sm_count);
  if (block_groups >= 0)
    tiling.block_group_rows = block_groups;
  if (ffma.stages > 0)
    tiling.stages = ffma.stages;
  tiling.warp_rows = ffma.warp_rows;
  tiling.warp_cols = ffma.warp_cols;
  tiling.zero_fill = ffma.zero_fill;
  std::printf("schedule: %s\n", tiling.str().c_str());
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
}

// ------------------------------------------------------------ command line


// ------------------------------------------------------------------ tuning

/// The problem the tuning database and the autotuner key on.
GemmProblem tuning_problem(const Shape &shape, Type dtype, bool tensor_cores) {
  GemmProblem problem;
  problem.dtype = dtype == BFloat(16) ? "bf16" : dtype == Float(16) ? "f16" : tensor_cores ? "tf32" : "f32";
  problem.out_dtype = dtype == BFloat(16) ? "bf16" : dtype == Float(16) ? "f16" : "f32";
  problem.epilogue = "bias_gelu";
  problem.M = shape.M;
  problem.N = shape.N;
  problem.K = shape.K;
  return problem;
}

/// The schedule from --autotune (tuned here, merged into --tuning-db) or
/// from --tuning-db alone.
void apply_tuned_schedule(FusedGemm &g, const Shape &shape, Type dtype, bool tensor_cores, bool have_gpu,
                          const Options &options) {
  GemmProblem problem = tuning_problem(shape, dtype, tensor_cores);
  GemmCandidate candidate;
  if (options.autotune) {
    TuneRequest request;
    request.problem = problem;
    request.database = options.tuning_db;
    request.max_candidates = static_cast<size_t>(options.autotune_candidates);
    request.progress = progress_wanted(stderr);
    TuneOutcome outcome = tune_gemm_on_this_gpu(request);
    std::printf("\n== autotune ==\n%s", outcome.result.summary().c_str());
    if (!options.tuning_db.empty())
      std::printf("merged into the tuning database %s\n", options.tuning_db.c_str());
    candidate = outcome.best;
  } else {
    GpuIdentity gpu = have_gpu ? current_gpu_identity() : GpuIdentity{"", GpuTarget().sm(), 132};
    std::string note;
    candidate = tuned_or_default_candidate(options.tuning_db, problem, gpu.sm, gpu.name, gpu.sm_count, &note);
    std::printf("%s\n", note.c_str());
  }
  std::printf("schedule: %s\n", candidate.str().c_str());
  apply_gemm_candidate(problem, candidate, g.out, g.acc, g.A, g.B, g.i, g.j, g.k);
}

// ----------------------------------------------------------------- checking

/// ||ours - ref|| / ||ref|| over the given rows of ours; infinity if ours has
/// a value that is not finite (an element never written, or a NaN).
struct Comparison {
  double relative_error = 0;
  size_t not_finite = 0;
};

Comparison compare(const Buffer &ours, const std::vector<double> &reference, const std::vector<int> &rows, int N) {
  Comparison result;
  double difference = 0, norm = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int j = 0; j < N; ++j) {
      double value = ours.get(static_cast<size_t>(rows[r]) * N + j);
      double expected = reference[r * N + j];
      if (!std::isfinite(value)) {
        ++result.not_finite;
        continue;
      }
      difference += (value - expected) * (value - expected);
      norm += expected * expected;
    }
  result.relative_error =
      result.not_finite ? std::numeric_limits<double>::infinity() : std::sqrt(difference / std::max(norm, 1e-300));
  return result;
}

/// The elements of `buffer` as floats (16-bit values widened exactly).
std::vector<float> widened(const Buffer &buffer) {
  std::vector<float> values(buffer.size());
  for (size_t n = 0; n < values.size(); ++n)
    values[n] = buffer.get(n);
  return values;
}

/// gelu(A * B + bias) in double for the given rows (all columns), from the
/// inputs' exact values.
std::vector<double> double_reference(const Buffer &A, const Buffer &B, const Buffer &bias, const std::vector<int> &rows,
                                     const Shape &s) {
  std::vector<double> result(rows.size() * s.N);
  std::vector<double> row(s.N);
  const std::vector<float> B_values = widened(B);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int k = 0; k < s.K; ++k) {
      double a = A.at(rows[r], k);
      const float *b = B_values.data() + static_cast<size_t>(k) * s.N;
      for (int j = 0; j < s.N; ++j)
        row[j] += a * b[j];
    }
    for (int j = 0; j < s.N; ++j) {
      double x = row[j] + bias.get(j);
      result[r * s.N + j] = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    }
  }
  return result;
}

bool report_check(const char *what, const Comparison &c, double tolerance) {
  bool ok = c.relative_error <= tolerance;
  if (c.not_finite)
    std::printf("  %-44s %zu values not finite (unwritten or NaN): FAIL\n", what, c.not_finite);
  else
    std::printf("  %-44s relative error %.3g (tolerance %.0e): %s\n", what, c.relative_error, tolerance,
                ok ? "ok" : "FAIL");
  return ok;
}

std::string shape_text(const Shape &s) {
  return std::to_string(s.M) + " x " + std::to_string(s.N) + " x " + std::to_string(s.K);
}

double tflops(const Shape &s, double ms) { return 2.0 * s.M * s.N * s.K / (ms * 1e-3) / 1e12; }

// ------------------------------------------------------------- compilation

/// What ptxas says of `ptx`'s kernels; false if it rejects the PTX.
bool report_ptxas(const std::string &ptx, const GpuTarget &target) {
  try {
    PtxasResult result = assemble_ptx(ptx, target);
    for (const KernelResources &kernel : result.kernels)
      std::printf("ptxas: %s: %d registers, %d bytes shared memory, %d bytes stack, spills %d bytes stored / %d "
                  "loaded%s\n",
                  kernel.name.c_str(), kernel.registers, kernel.shared_bytes, kernel.stack_frame_bytes,
                  kernel.spill_store_bytes, kernel.spill_load_bytes, kernel.spills() ? " (SPILLS)" : "");
  } catch (const UserError &error) {
    std::printf("ptxas rejected the PTX: %s\n", error.what());
    return false;
  }
  return true;
}

/// Prints the PTX step: the general program, and where the shape's sizes
/// include multiples of 16, 8 or 4, the program specialized for them, which a GPU
/// launch at this shape compiles and runs instead (Pipeline::gpu_executable);
/// false if PTX could not be produced.
bool report_ptx(Pipeline &pipeline, const Shape &shape) {
  GpuTarget target; // sm_90a
  std::printf("\n== PTX for %s ==\n", target.sm().c_str());
  SizeMultiples multiples;
  try {
    const std::string &ptx = pipeline.ptx(target);
    std::printf("schedule to PTX: %.1f ms (%s), %zu bytes of PTX\n", pipeline.last_ptx_compile_ms(),
                pipeline.last_ptx_from_cache() ? "from the compile cache; COALESCE_CACHE=0 compiles afresh"
                                               : "lowering, LLVM IR, optimization, NVPTX",
                ptx.size());
    multiples = specializable_sizes(pipeline.gpu_program(), {{"M", shape.M}, {"N", shape.N}, {"K", shape.K}});
  } catch (const UserError &error) {
    std::printf("could not generate PTX: %s\n", error.what());
    return false;
  }
  if (!ptxas_available()) {
    std::printf("ptxas is missing (looked for %s): no resource report\n", cuda_toolkit_path("bin/ptxas").c_str());
    return true;
  }
  if (!report_ptxas(pipeline.ptx(target), target))
    return false;
  if (multiples.empty())
    return true;
  const std::string names = specialization_name(multiples);
  auto start = std::chrono::steady_clock::now();
  const std::string &specialized = pipeline.specialized_ptx(target, multiples);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (&specialized == &pipeline.ptx(target)) {
    std::printf("the sizes' multiples (%s) decide nothing in this program: a GPU launch runs the general "
                "kernel\n",
                names.c_str());
    return true;
  }
  std::printf("specialized for %s (the kernel a GPU launch at this shape compiles and runs): "
              "%.1f ms, %zu bytes of PTX\n",
              names.c_str(), ms, specialized.size());
  return report_ptxas(specialized, target);
}

// ------------------------------------------------------------------- GPU run

struct Timing {
  double median = 0, min = 0, max = 0;
  int warmup_runs = 0;
};

/// Times `run` per the benchmark protocol: a warm-up of at least kWarmupMs,
/// then kTimedIterations runs, each between its own pair of events, with the
/// L2 flushed (by writing `flush`) before each.
Timing time_on_gpu(const std::function<void()> &run, gpu::DeviceBuffer &flush) {
  Timing timing;
  auto start = std::chrono::steady_clock::now();
  while (timing.warmup_runs < 3 ||
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < kWarmupMs) {
    run();
    gpu::synchronize();
    ++timing.warmup_runs;
  }
  gpu::EventTimer timer;
  std::vector<double> ms;
  for (int n = 0; n < kTimedIterations; ++n) {
    flush.fill_bytes(static_cast<uint8_t>(n));
    timer.start();
    run();
    timer.stop();
    ms.push_back(timer.elapsed_ms());
  }
  std::sort(ms.begin(), ms.end());
  timing.min = ms.front();
  timing.max = ms.back();
  timing.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return timing;
}

void print_timing(const char *what, const Timing &t, const Shape &s) {
  std::printf("  %-22s median %8.3f ms  %6.2f TFLOP/s  (min %.3f, max %.3f; %d warm-up runs)\n", what, t.median,
              tflops(s, t.median), t.min, t.max, t.warmup_runs);
}

int run_on_gpu(Pipeline &pipeline, const Shape &s, Type dtype, double tolerance,
               [[maybe_unused]] bench::Precision p) {
  gpu::Device &device = gpu::Device::get();
  GpuTarget target = target_for_current_device();
  std::printf("\n== GPU run: %s, %s, %s ==\n", device.name().c_str(), target.sm().c_str(), shape_text(s).c_str());
  const GpuExecutable &executable = pipeline.gpu_executable(target);

  Buffer A({s.M, s.K}, dtype), B({s.K, s.N}, dtype), bias({s.N}), out({s.M, s.N}, dtype);
  A.fill_random(1);
  B.fill_random(2);
  bias.fill_random(3);
  // By bytes: a bf16/f16 element is 2.
  gpu::DeviceBuffer A_dev(A.size_in_bytes()), B_dev(B.size_in_bytes()), bias_dev(bias.size_in_bytes()),
      out_dev(out.size_in_bytes());
  A_dev.upload(A.raw_data(), A.size_in_bytes());
  B_dev.upload(B.raw_data(), B.size_in_bytes());
  bias_dev.upload(bias.raw_data(), bias.size_in_bytes());
  // Writing twice the L2 evicts what earlier iterations left there.
  gpu::DeviceBuffer flush(static_cast<size_t>(std::max<int64_t>(device.l2_bytes(), 1 << 20)) * 2);

  std::vector<CUdeviceptr> pointers =
      bench::gemm_pointers(executable, A_dev.ptr(), B_dev.ptr(), bias_dev.ptr(), out_dev.ptr());
  std::map<std::string, int64_t> params{{"M", s.M}, {"N", s.N}, {"K", s.K}};
  auto ours = [&] { executable.launch(pointers, params); };

  // Correctness first: poison the output (NaN in every type), run once, read
  // every element.
  out_dev.fill_bytes(0xFF);
  ours();
  gpu::synchronize();
  out_dev.download(out.raw_data(), out.size_in_bytes());

  bool ok = true;
  std::vector<int> sampled_rows;
  for (int r = 0; r < 16; ++r)
    sampled_rows.push_back(static_cast<int>(int64_t(r) * (s.M - 1) / 15));
  sampled_rows.erase(std::unique(sampled_rows.begin(), sampled_rows.end()), sampled_rows.end());
  std::printf("checks:\n");
  ok &= report_check(("ours vs double reference (" + std::to_string(sampled_rows.size()) + " rows)").c_str(),
                     compare(out, double_reference(A, B, bias, sampled_rows, s), sampled_rows, s.N), tolerance);

  Timing ours_timing = time_on_gpu(ours, flush);

#ifdef COALESCE_HAVE_CUBLAS
  // cuBLAS of the same precision on the same buffers: its GEMM alone (the
  // figure to beat), the unfused chain (its GEMM, then bias + GELU in the
  // output type) and cuBLASLt's fused GELU_BIAS (tanh GELU; timed only).
  // The check is against cuBLAS's GEMM with an f32 output plus bias and
  // erf-GELU in f32: the same accumulation, no 16-bit rounding on the way.
  const size_t out_elements = size_t(s.M) * size_t(s.N);
  const size_t out_bytes = out_elements * size_t(reference::output_bytes(p));
  gpu::DeviceBuffer C_f32(out_elements * sizeof(float)), ref_dev(out_elements * sizeof(float));
  gpu::DeviceBuffer C_tmp(out_bytes), chain_out(out_bytes), lt_out(out_bytes), bias_out_dev(out_bytes / s.M);
  {
    Buffer bias_out({s.N}, dtype); // the bias in the output type, for cuBLASLt
    for (int j = 0; j < s.N; ++j)
      bias_out.set(size_t(j), bias.get(size_t(j)));
    bias_out_dev.upload(bias_out.raw_data(), bias_out.size_in_bytes());
  }
  ref_dev.fill_bytes(0xFF);
  reference::gemm(p, s.M, s.N, s.K, A_dev.as<void>(), B_dev.as<void>(), C_f32.as<void>(), /*f32_output=*/true);
  reference::bias_gelu(s.M, s.N, C_f32.as<float>(), bias_dev.as<float>(), ref_dev.as<float>());
  gpu::synchronize();
  Buffer ref({s.M, s.N});
  ref_dev.download(ref.values());
  {
    std::vector<int> all_rows(s.M);
    for (int r = 0; r < s.M; ++r)
      all_rows[r] = r;
    std::vector<double> ref_values(ref.values().begin(), ref.values().end());
    ok &= report_check(("ours vs cuBLAS " + std::string(reference::precision_name(p)) +
                        " GEMM + bias + GELU (every element)")
                           .c_str(),
                       compare(out, ref_values, all_rows, s.N), tolerance);
  }
  auto gemm_alone = [&] {
    reference::gemm(p, s.M, s.N, s.K, A_dev.as<void>(), B_dev.as<void>(), C_tmp.as<void>());
  };
  auto chain = [&] {
    reference::chain(p, s.M, s.N, s.K, A_dev.as<void>(), B_dev.as<void>(), bias_dev.as<float>(), C_tmp.as<void>(),
                     chain_out.as<void>());
  };
  auto lt = [&] {
    reference::lt_gelu_bias(p, s.M, s.N, s.K, A_dev.as<void>(), B_dev.as<void>(), bias_out_dev.as<void>(),
                            lt_out.as<void>());
  };
  Timing gemm_timing = time_on_gpu(gemm_alone, flush);
  Timing chain_timing = time_on_gpu(chain, flush);
  Timing lt_timing = time_on_gpu(lt, flush);
#endif

  std::printf("timing (%d timed runs each, L2 flushed before each; TFLOP/s counts 2*M*N*K):\n", kTimedIterations);
  print_timing("coalesce (fused)", ours_timing, s);
#ifdef COALESCE_HAVE_CUBLAS
  const std::string name = reference::precision_name(p);
  print_timing(("cuBLAS " + name + " GEMM").c_str(), gemm_timing, s);
  print_timing(("cuBLAS " + name + " chain").c_str(), chain_timing, s);
  print_timing(("cuBLASLt " + name + " GELU_BIAS").c_str(), lt_timing, s);
  std::printf("  speed vs cuBLAS %s GEMM alone: %.3fx (its time / ours; above 1: coalesce is faster)\n", name.c_str(),
              gemm_timing.median / ours_timing.median);
  std::printf("  speed vs cuBLAS %s chain (GEMM, then bias + GELU): %.3fx\n", name.c_str(),
              chain_timing.median / ours_timing.median);
  std::printf("  speed vs cuBLASLt %s GELU_BIAS (fused, tanh GELU): %.3fx\n", name.c_str(),
              lt_timing.median / ours_timing.median);
#else
  std::printf("  cuBLAS: not built (no nvcc when the build was configured): no comparison\n");
#endif
  return ok ? 0 : 1;
}

// ------------------------------------------------------------------- CPU run

int run_on_cpu(Pipeline &pipeline, const Shape &s, Type dtype, double tolerance) {
  std::printf("\n== CPU run: %s ==\n", shape_text(s).c_str());
  Buffer A({s.M, s.K}, dtype), B({s.K, s.N}, dtype), bias({s.N}), out({s.M, s.N}, dtype);
  A.fill_random(1);
  B.fill_random(2);
  bias.fill_random(3);
  out.poison();
  auto start = std::chrono::steady_clock::now();
  pipeline.realize_on_cpu({{"A", A}, {"B", B}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}}, out);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("compiled for the host and ran in %.1f ms (serial semantics of the same loop nest)\n", ms);
  std::vector<int> rows(s.M);
  for (int r = 0; r < s.M; ++r)
    rows[r] = r;
  std::printf("checks:\n");
  bool ok = report_check("ours vs double reference (every element)",
                         compare(out, double_reference(A, B, bias, rows, s), rows, s.N), tolerance);
  return ok ? 0 : 1;
}

int run_main_job(const Options &options) {
  std::string why_no_gpu;
  bool have_gpu = gpu::gpu_available(&why_no_gpu);
  Shape shape = have_gpu || options.shape_given ? options.shape : kCpuShape;

  FusedGemm gemm(options.dtype);
  if (options.autotune || !options.tuning_db.empty())
    apply_tuned_schedule(gemm, shape, options.dtype, options.tensor_cores, have_gpu, options);
  else
    apply_default_schedule(gemm, shape, options.tensor_cores, options.warpgroup, options.dtype, options.mma_tiling,
                           options.block_groups, options.wgmma, options.ffma);
  Pipeline pipeline(gemm.out);
  std::string types = options.dtype == Float(32)
                          ? std::string("FP32")
                          : "A, B and out " + options.dtype.str() + ", bias and arithmetic FP32";
  std::printf("coalesce-main: out(i, j) = gelu(sum_k A(i, k) * B(k, j) + bias(j)), %s, %s\n", types.c_str(),
              shape_text(shape).c_str());
  std::printf("\n== loop nest ==\n%s", pipeline.loop_nest().c_str());

  bool ptx_ok = report_ptx(pipeline, shape);
  const double tolerance = tolerance_for(options.dtype, options.tensor_cores && options.dtype == Float(32));
  int status;
  if (have_gpu) {
    status = run_on_gpu(pipeline, shape, options.dtype, tolerance, precision_of(options));
  } else {
    std::printf("\nno GPU: %s; running on the CPU\n", why_no_gpu.c_str());
    status = run_on_cpu(pipeline, shape, options.dtype, tolerance);
  }
  if (!ptx_ok)
    status = 1;
  std::printf("\n%s\n", status == 0 ? "main job: all checks passed" : "main job: FAILED");
  return status;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parse_options(argc, argv);
  try {
    return run_main_job(options);
  } catch (const coalesce::UserError &error) {
    std::fprintf(stderr, "coalesce-main: error: %s\n", error.what());
  } catch (const coalesce::InternalError &error) {
    std::fprintf(stderr, "coalesce-main: %s\n", error.what());
  } catch (const std::exception &error) {
    std::fprintf(stderr, "coalesce-main: unexpected error: %s\n", error.what());
  }
  return 1;
}
