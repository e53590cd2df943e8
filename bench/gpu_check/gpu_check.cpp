// coalesce-gpu-check: every GPU schedule of the project, checked on the GPU,
// for each precision (--precisions, default all):
//
// fp32 (the FFMA schedules, f32 everywhere):
//   - every GPU-mapped catalog schedule (examples/Schedules.h) and the tuned
//     default (schedule_gemm with default_gemm_tiling for the shape, bias +
//     exact GELU) against a double-precision reference on the CPU at 1x1x1,
//     127x129x131 and 1024^3 (every row where the shape is small, every 7th
//     row and the last at 1024^3), tolerance 1e-5;
//   - the same checks of the tuned default with its copies zero-filled
//     (GemmTiling::zero_fill: its last k step in the one loop), which the
//     library refuses on the GPU until they pass;
//   - the tuned default and two catalog schedules (fused_gelu_128x128 and the
//     GEMM-only shared_staged; every schedule with --full) against cuBLAS at
//     4093x4091x4097 and 8192x11008x4096, tolerance 1e-4: SGEMM for a GEMM
//     alone, the cuBLAS chain (SGEMM, then bias + erf GELU) for bias + GELU,
//     SGEMM then the epilogue on the host for the other epilogues; each
//     cuBLAS reference is itself checked against the double reference on 8 rows;
//   - every fused epilogue schedule at K = 1 and K = 3 (67 x 45) against the
//     unfused chain in float on the CPU, tolerance 1e-5.
// tf32, bf16, f16 (the tensor-core schedule, bias + GELU): MmaCheck.cpp;
// on a B stored N x K (nn.Linear's weight, W(j, k)): KMajorCheck.cpp;
// epilogues with a residual, or scales and a second matrix (bf16):
// EpilogueCheck.cpp; with bf16, the 8-bit floats (conversions bit for bit,
// FFMA and warpgroup-MMA FP8 GEMMs): Fp8Check.cpp; with bf16, two
// reductions fused into one nest (a SwiGLU's, unstaged and staged):
// SwiGluCheck.cpp.
// Every precision: reductions split across blocks (split_k) at the five
// split-K shapes, deterministic mode bit-reproducible across two launches,
// the K = 1 / K = 3 pair, and only the last block row split (split_k_tail):
// SplitKCheck.cpp.
//
// The output is poisoned (every byte 0xFF, a NaN) before each run; then every
// element is read back and must be finite, and the poison just past the
// output must be intact (nothing written past the end). The fp32 inputs are
// drawn once on the host (uniform in [-1, 1)) into pools sized for the
// largest shape and uploaded once; a shape reads the leading elements of
// each pool.
//
// Without a GPU it prints "no GPU: <reason>; skipping" and exits 0.
// --sanitizer-case runs the tuned fp32 default once at 131x133x67, the
// bf16 tensor-core schedule once at the same ragged shape, and a 3-way
// split-K (fp32 and bf16, each combine mode) there, the warpgroup
// variants and default tilings (MmaCheck.h), B stored N x K
// (KMajorCheck.h), the FP8 warpgroup MMA (Fp8Check.h) and the fused SwiGLU (SwiGluCheck.h), each on
// buffers of exactly the right size, for
// compute-sanitizer; --sanitizer-cases=fp8,swiglu (say) runs only those
// groups. --time-limit=S starts no part of the full check (a section for
// one precision) after S seconds and prints the commands that run the
// parts left, so that a run under a wall-clock limit ends with its summary.
// Exit status: 0 when every check passed, 1 when one failed, 2 for a bad
// command line, 3 when none failed but parts were left at the time limit.

#include "bench/common/GemmPointers.h"
#include "bench/gpu_check/BatchedCheck.h"
#include "bench/gpu_check/ConsumerScheduleCheck.h"
#include "bench/gpu_check/EpilogueCheck.h"
#include "bench/gpu_check/Fp8Check.h"
#include "bench/gpu_check/KMajorCheck.h"
#include "bench/gpu_check/LayoutMatrixCheck.h"
#include "bench/gpu_check/MMajorCheck.h"
#include "bench/gpu_check/MathCheck.h"
#include "bench/gpu_check/MmaCheck.h"
#include "bench/gpu_check/PersistentClusterCheck.h"
#include "bench/gpu_check/ReductionStartCheck.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SplitKCheck.h"
#include "bench/gpu_check/StridedCheck.h"
#include "bench/gpu_check/SwiGluCheck.h"
#include "bench/gpu_check/Tf32TruncatedCheck.h"
#include "bench/gpu_check/TileStoresCheck.h"
#include "bench/reference/CublasReference.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"
#include "examples/Schedules.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace coalesce;
using namespace coalesce::examples;

constexpr double kToleranceDouble = 1e-5; // vs the double reference and the unfused chain
constexpr double kToleranceCublas = 1e-4; // vs cuBLAS FP32
/// Above this many multiply-adds the CPU reference samples every 7th row.
constexpr double kFullReferenceMacs = 1 << 27;
constexpr int kSampleStride = 7;
/// Rows of the cuBLAS reference checked against the double reference.
constexpr int kCublasSampleRows = 8;
/// Floats past the output whose poison must survive a run.
constexpr size_t kGuardFloats = 1 << 16;

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
  size_t mk() const { return size_t(M) * K; }
  size_t kn() const { return size_t(K) * N; }
  size_t mn() const { return size_t(M) * N; }
};

const std::vector<Shape> kReferenceShapes = {{1, 1, 1}, {127, 129, 131}, {1024, 1024, 1024}};
const std::vector<Shape> kCublasShapes = {{4093, 4091, 4097}, {8192, 11008, 4096}};
const std::vector<Shape> kChainShapes = {{67, 45, 1}, {67, 45, 3}};
const Shape kSanitizerShape{131, 133, 67};
/// The catalog schedules that also run at the cuBLAS shapes (all with --full).
const std::vector<std::string> kBigCatalog = {"fused_gelu_128x128", "shared_staged"};

// ------------------------------------------------------------------ schedules

/// A schedule under check: a catalog entry, or the tuned default, whose tile
/// sizes depend on the shape (one pipeline per distinct tiling).
struct Candidate {
  std::string name;
  Epilogue epilogue;
  std::optional<ExampleSchedule> catalog; // empty: the tuned default
  /// The tuned default with its copies zero-filled (GemmTiling::zero_fill:
  /// the last k step in the one loop, copies tested only at the ends).
  bool zero_fill = false;
};

class Pipelines {
public:
  /// The pipeline for `c` at `s`, compiled and loaded on first use.
  const GpuExecutable &executable(const Candidate &c, const Shape &s, std::string *detail) {
    std::string key = c.name;
    Gemm gemm = make_gemm(c.epilogue);
    if (c.catalog) {
      c.catalog->apply(gemm);
    } else {
      GemmTiling tiling = default_gemm_tiling(s.M, s.N, s.K, gpu::Device::get().sm_count());
      tiling.zero_fill = c.zero_fill;
      key += "/" + tiling.str();
      *detail = tiling.str();
      schedule_gemm(gemm.out, gemm.acc, gemm.A, gemm.B, gemm.i, gemm.j, gemm.k, tiling);
    }
    std::unique_ptr<Pipeline> &pipeline = pipelines_[key];
    if (!pipeline)
      pipeline = std::make_unique<Pipeline>(gemm.out);
    return pipeline->gpu_executable(target_for_current_device());
  }

private:
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

// The tuned default (bias + GELU), with its copies as they are and zero-filled.
std::vector<Candidate> default_candidates() {
  return {{"default", Epilogue::BiasGelu, std::nullopt},
          {"default_zero_filled", Epilogue::BiasGelu, std::nullopt, true}};
}

std::vector<Candidate> gpu_candidates() {
  std::vector<Candidate> candidates = default_candidates();
  for (const ExampleSchedule &s : example_schedules())
    if (s.maps_to_gpu)
      candidates.push_back({s.name, s.epilogue, s});
  return candidates;
}

// ------------------------------------------------------------------- results

void record(const Candidate &c, const Shape &s, const std::string &vs, double error, size_t not_finite,
            size_t guard_damage, double ms, const std::string &detail, const std::string &failure = "") {
  gpu_check::Outcome o;
  o.error = error;
  o.tolerance = vs.rfind("cuBLAS", 0) == 0 ? kToleranceCublas : kToleranceDouble;
  o.not_finite = not_finite;
  o.guard_damage = guard_damage;
  o.ms = ms;
  o.detail = detail;
  o.failure = failure;
  gpu_check::record(c.name + " (" + epilogue_name(c.epilogue) + ")", s.str(), vs, o);
}

// ---------------------------------------------------------------- device data

/// Copies `count` floats from device memory at `ptr` (DeviceBuffer::download
/// copies whole buffers only).
void download_floats(CUdeviceptr ptr, size_t count, float *host) {
  if (count)
    gpu::cu_check(gpu::driver().memcpy_dtoh(host, ptr, count * sizeof(float)), "cuMemcpyDtoH of ", count,
                  " floats");
}

struct DeviceData {
  std::vector<float> a, b, bias; // host pools, uniform in [-1, 1)
  gpu::DeviceBuffer a_dev, b_dev, bias_dev, out_dev, tmp_dev, ref_dev;
  std::vector<float> out; // host copy of the output
};

std::vector<float> random_pool(size_t count, uint32_t seed) {
  Buffer buffer({static_cast<int>(count)});
  buffer.fill_random(seed);
  return std::move(buffer.values());
}

/// Runs `exe` at `s` on the pooled buffers into a poisoned output, reads the
/// whole output back into data.out, counts elements that are not finite and
/// poisoned floats past the output that were overwritten.
double run_once(const GpuExecutable &exe, const Shape &s, DeviceData &data, size_t *not_finite, size_t *guard) {
  double ms = bench::launch_gemm_into_poisoned(exe, data.a_dev.ptr(), data.b_dev.ptr(), data.bias_dev.ptr(),
                                               data.out_dev, s.M, s.N, s.K);
  download_floats(data.out_dev.ptr(), s.mn(), data.out.data());
  *not_finite = 0;
  for (size_t n = 0; n < s.mn(); ++n)
    *not_finite += std::isfinite(data.out[n]) ? 0 : 1;
  size_t capacity = data.out_dev.bytes() / sizeof(float);
  size_t guard_count = std::min(kGuardFloats, capacity - s.mn());
  std::vector<uint32_t> guard_bits(guard_count);
  if (guard_count)
    gpu::cu_check(gpu::driver().memcpy_dtoh(guard_bits.data(), data.out_dev.ptr() + s.mn() * sizeof(float),
                                            guard_count * sizeof(float)),
                  "cuMemcpyDtoH of the guard");
  *guard = 0;
  for (uint32_t bits : guard_bits)
    *guard += bits == 0xFFFFFFFFu ? 0 : 1;
  return ms;
}

// ----------------------------------------------------------------- references

/// Sums in double for the sampled rows of `s` (all columns), from the pools.
struct DoubleSums {
  std::vector<int> rows;
  std::vector<double> sums; // rows.size() x N
};

/// `rows` (default: every row, or every 7th and the last where the shape is large).
DoubleSums double_sums(const DeviceData &data, const Shape &s, std::vector<int> rows = {}) {
  DoubleSums result;
  if (rows.empty()) {
    int stride = double(s.M) * s.N * s.K > kFullReferenceMacs ? kSampleStride : 1;
    for (int r = 0; r < s.M; r += stride)
      rows.push_back(r);
    if (rows.back() != s.M - 1)
      rows.push_back(s.M - 1);
  }
  result.rows = std::move(rows);
  result.sums.assign(result.rows.size() * s.N, 0.0);
  for (size_t r = 0; r < result.rows.size(); ++r) {
    double *row = &result.sums[r * s.N];
    for (int k = 0; k < s.K; ++k) {
      double a = data.a[size_t(result.rows[r]) * s.K + k];
      const float *b = &data.b[size_t(k) * s.N];
      for (int j = 0; j < s.N; ++j)
        row[j] += a * b[j];
    }
  }
  return result;
}

/// ||out - ref|| / ||ref|| over the sampled rows, ref = epilogue(sum + bias) in
/// double; `out` is M x N (by default the output last read back).
double error_vs_double(const DeviceData &data, const Shape &s, const DoubleSums &ref, Epilogue e,
                       const float *out = nullptr) {
  if (!out)
    out = data.out.data();
  double diff = 0, norm = 0;
  for (size_t r = 0; r < ref.rows.size(); ++r)
    for (int j = 0; j < s.N; ++j) {
      double want = reference_epilogue<double>(e, ref.sums[r * s.N + j], data.bias[j]);
      double got = out[size_t(ref.rows[r]) * s.N + j];
      diff += (got - want) * (got - want);
      norm += want * want;
    }
  if (!std::isfinite(diff))
    return std::numeric_limits<double>::infinity();
  return norm == 0 ? (diff == 0 ? 0 : std::numeric_limits<double>::infinity()) : std::sqrt(diff / norm);
}

/// ||a - b|| / ||b|| over `count` floats; infinity if either has a NaN.
double error_vs_floats(const float *a, const float *b, size_t count) {
  double diff = 0, norm = 0;
  for (size_t n = 0; n < count; ++n) {
    double d = double(a[n]) - double(b[n]);
    diff += d * d;
    norm += double(b[n]) * b[n];
  }
  if (!std::isfinite(diff) || !std::isfinite(norm))
    return std::numeric_limits<double>::infinity();
  return norm == 0 ? (diff == 0 ? 0 : std::numeric_limits<double>::infinity()) : std::sqrt(diff / norm);
}

/// The cuBLAS result for epilogue `e` at `s`, on the host: SGEMM, then the
/// erf GELU kernel of the chain for bias + GELU, else the epilogue on the host.
std::vector<float> cublas_reference(DeviceData &data, const Shape &s, Epilogue e, std::string *how) {
  std::vector<float> ref(s.mn());
  data.ref_dev.fill_bytes(0xFF);
  const float *A = data.a_dev.as<float>(), *B = data.b_dev.as<float>(), *bias = data.bias_dev.as<float>();
  if (e == Epilogue::BiasGelu) {
    reference::chain(s.M, s.N, s.K, A, B, bias, data.tmp_dev.as<float>(), data.ref_dev.as<float>());
    *how = "cuBLAS chain";
  } else {
    reference::sgemm(s.M, s.N, s.K, A, B, data.ref_dev.as<float>());
    *how = e == Epilogue::None ? "cuBLAS sgemm" : "cuBLAS sgemm+host epi";
  }
  gpu::synchronize();
  download_floats(data.ref_dev.ptr(), s.mn(), ref.data());
  if (e != Epilogue::None && e != Epilogue::BiasGelu)
    for (size_t n = 0; n < ref.size(); ++n)
      ref[n] = reference_epilogue<float>(e, ref[n], data.bias[n % s.N]);
  size_t bad = 0;
  for (float v : ref)
    bad += std::isfinite(v) ? 0 : 1;
  if (bad)
    user_error("the cuBLAS reference has ", bad, " values that are not finite");
  return ref;
}

GemmData gemm_data(const DeviceData &data, const Shape &s) {
  GemmData g{Buffer({s.M, s.K}), Buffer({s.K, s.N}), Buffer({s.N})};
  std::copy(data.a.begin(), data.a.begin() + s.mk(), g.a.values().begin());
  std::copy(data.b.begin(), data.b.begin() + s.kn(), g.b.values().begin());
  std::copy(data.bias.begin(), data.bias.begin() + s.N, g.bias.values().begin());
  return g;
}

// ------------------------------------------------------------------ the check

/// Runs one candidate at one shape and records the comparison `compare` makes.
template <typename Compare>
void check(Pipelines &pipelines, const Candidate &c, const Shape &s, DeviceData &data, const std::string &vs,
           Compare compare) {
  std::string detail;
  try {
    const GpuExecutable &exe = pipelines.executable(c, s, &detail);
    size_t not_finite = 0, guard = 0;
    double ms = run_once(exe, s, data, &not_finite, &guard);
    record(c, s, vs, compare(), not_finite, guard, ms, detail);
  } catch (const std::exception &error) {
    record(c, s, vs, 0, 0, 0, 0, detail, error.what());
  }
}

// The tuned fp32 default (bias + GELU) once at the sanitizer shape, with
// its copies as they are and zero-filled.
void fp32_sanitizer_case() {
  const Shape s = kSanitizerShape;
  DeviceData data;
  data.a = random_pool(s.mk(), 1);
  data.b = random_pool(s.kn(), 2);
  data.bias = random_pool(s.N, 3);
  data.a_dev = gpu::DeviceBuffer(s.mk() * sizeof(float));
  data.b_dev = gpu::DeviceBuffer(s.kn() * sizeof(float));
  data.bias_dev = gpu::DeviceBuffer(s.N * sizeof(float));
  data.out_dev = gpu::DeviceBuffer(s.mn() * sizeof(float));
  data.a_dev.upload(data.a);
  data.b_dev.upload(data.b);
  data.bias_dev.upload(data.bias);
  data.out.resize(s.mn());
  Pipelines pipelines;
  DoubleSums sums = double_sums(data, s);
  for (const Candidate &c : default_candidates())
    check(pipelines, c, s, data, "double (all rows)", [&] { return error_vs_double(data, s, sums, c.epilogue); });
}

// The groups of kernels --sanitizer-case runs, by the names
// --sanitizer-cases takes.
const std::vector<std::pair<std::string, void (*)()>> &sanitizer_groups() {
  static const std::vector<std::pair<std::string, void (*)()>> groups = {
      {"fp32", fp32_sanitizer_case},
      {"mma", gpu_check::mma_sanitizer_case},
      {"split-k", gpu_check::split_k_sanitizer_case},
      {"k-major", gpu_check::k_major_b_sanitizer_case},
      {"fp8", gpu_check::fp8_sanitizer_case},
      {"swiglu", gpu_check::swiglu_sanitizer_case},
      {"tile-stores", gpu_check::tile_stores_sanitizer_case},
      {"consumer-schedules", gpu_check::consumer_schedule_sanitizer_case},
      {"persistent-clusters", gpu_check::persistent_cluster_sanitizer_case},
      {"batched", gpu_check::batched_sanitizer_case},
      {"strided",
       [] {
         gpu_check::strided_sanitizer_case();
         gpu_check::layout_matrix_sanitizer_case();
       }},
      {"m-major", gpu_check::m_major_a_sanitizer_case},
      {"tf32-truncated", gpu_check::tf32_truncated_sanitizer_case}};
  return groups;
}

// The groups named in `list` (comma-separated; empty: all of them), or
// nothing with `error` set when a name is not a group.
std::optional<std::vector<void (*)()>> parse_sanitizer_groups(const std::string &list, std::string *error) {
  std::vector<void (*)()> chosen;
  if (list.empty()) {
    for (const auto &[name, run] : sanitizer_groups())
      chosen.push_back(run);
    return chosen;
  }
  llvm::SmallVector<llvm::StringRef, 8> names;
  llvm::StringRef(list).split(names, ',');
  for (llvm::StringRef name : names) {
    auto group = std::find_if(sanitizer_groups().begin(), sanitizer_groups().end(),
                              [&](const auto &g) { return g.first == name.trim(); });
    if (group == sanitizer_groups().end()) {
      *error = "--sanitizer-cases: '" + name.trim().str() + "' is no group; the groups are";
      for (const auto &g : sanitizer_groups())
        *error += " " + g.first;
      return std::nullopt;
    }
    chosen.push_back(group->second);
  }
  return chosen;
}

int sanitizer_case(const std::vector<void (*)()> &groups) {
  std::printf("coalesce-gpu-check --sanitizer-case: each group's kernels once at a ragged shape, exact-size buffers\n");
  for (void (*run)() : groups)
    run();
  return gpu_check::all_passed() ? 0 : 1;
}

/// The fp32 (FFMA) schedules; results go to Report.h.
void fp32_check(bool full) {
  std::vector<Shape> all = kReferenceShapes;
  all.insert(all.end(), kCublasShapes.begin(), kCublasShapes.end());
  all.insert(all.end(), kChainShapes.begin(), kChainShapes.end());
  size_t max_mk = 0, max_kn = 0, max_mn = 0;
  int max_n = 0;
  for (const Shape &s : all) {
    max_mk = std::max(max_mk, s.mk());
    max_kn = std::max(max_kn, s.kn());
    max_mn = std::max(max_mn, s.mn());
    max_n = std::max(max_n, s.N);
  }
  DeviceData data;
  data.a = random_pool(max_mk, 1);
  data.b = random_pool(max_kn, 2);
  data.bias = random_pool(max_n, 3);
  data.a_dev = gpu::DeviceBuffer(max_mk * sizeof(float));
  data.b_dev = gpu::DeviceBuffer(max_kn * sizeof(float));
  data.bias_dev = gpu::DeviceBuffer(max_n * sizeof(float));
  data.out_dev = gpu::DeviceBuffer((max_mn + kGuardFloats) * sizeof(float));
  data.tmp_dev = gpu::DeviceBuffer(max_mn * sizeof(float));
  data.ref_dev = gpu::DeviceBuffer(max_mn * sizeof(float));
  data.a_dev.upload(data.a);
  data.b_dev.upload(data.b);
  data.bias_dev.upload(data.bias);
  data.out.resize(max_mn);

  std::vector<Candidate> candidates = gpu_candidates();
  Pipelines pipelines;

  std::printf("\n== against the double reference on the CPU (every GPU schedule) ==\n");
  for (const Shape &s : kReferenceShapes) {
    DoubleSums sums = double_sums(data, s);
    std::string vs = sums.rows.size() == size_t(s.M) ? "double (all rows)"
                                                      : "double (" + std::to_string(sums.rows.size()) + " rows)";
    for (const Candidate &c : candidates)
      check(pipelines, c, s, data, vs, [&] { return error_vs_double(data, s, sums, c.epilogue); });
  }

  std::printf("\n== against cuBLAS (%s) ==\n",
              full ? "every GPU schedule (--full)" : "the tuned default, fused_gelu_128x128 and shared_staged; "
                                                     "--full for every GPU schedule");
  for (const Shape &s : kCublasShapes) {
    // The cuBLAS reference itself is checked against the double reference on
    // a few rows, so that no comparison rests on a wrong reference.
    std::vector<int> rows;
    for (int r = 0; r < kCublasSampleRows; ++r)
      rows.push_back(int(int64_t(r) * (s.M - 1) / (kCublasSampleRows - 1)));
    DoubleSums sums = double_sums(data, s, rows);
    std::map<Epilogue, std::vector<float>> refs;
    std::map<Epilogue, std::string> hows;
    for (const Candidate &c : candidates) {
      if (!full && c.catalog && std::find(kBigCatalog.begin(), kBigCatalog.end(), c.name) == kBigCatalog.end())
        continue;
      if (!refs.count(c.epilogue)) {
        try {
          // One reference held at a time: the largest is 360 MB.
          refs.clear();
          refs[c.epilogue] = cublas_reference(data, s, c.epilogue, &hows[c.epilogue]);
          Candidate cublas{hows[c.epilogue], c.epilogue, std::nullopt};
          record(cublas, s, "double (" + std::to_string(rows.size()) + " rows)",
                 error_vs_double(data, s, sums, c.epilogue, refs[c.epilogue].data()), 0, 0, 0, "");
        } catch (const std::exception &error) {
          record(c, s, "cuBLAS", 0, 0, 0, 0, "", std::string("reference: ") + error.what());
          continue;
        }
      }
      const std::vector<float> &ref = refs[c.epilogue];
      check(pipelines, c, s, data, hows[c.epilogue],
            [&] { return error_vs_floats(data.out.data(), ref.data(), s.mn()); });
    }
  }

  std::printf("\n== K = 1 and K = 3 against the unfused chain on the CPU (every fused epilogue) ==\n");
  for (const Shape &s : kChainShapes) {
    GemmData host = gemm_data(data, s);
    for (const Candidate &c : candidates) {
      if (c.epilogue == Epilogue::None)
        continue;
      Buffer chain = unfused_chain(host, s.M, s.N, s.K, c.epilogue);
      check(pipelines, c, s, data, "unfused chain",
            [&] { return error_vs_floats(data.out.data(), chain.data(), s.mn()); });
    }
  }

}

/// The full check's sections, in the order they run (--sections picks some).
const std::vector<std::string> &full_check_sections() {
  static const std::vector<std::string> sections = {"math",
                                                    "fp32",
                                                    "mma",
                                                    "reduction-start",
                                                    "k-major",
                                                    "m-major",
                                                    "tile-stores",
                                                    "consumer-schedules",
                                                    "persistent-clusters",
                                                    "batched",
                                                    "strided",
                                                    "epilogues",
                                                    "fp8",
                                                    "fused-reductions",
                                                    "split-k",
                                                    "tf32-truncated"};
  return sections;
}

/// --sections's list: every section when empty; nullopt, with `error`
/// naming the bad one and the sections, for a name that is none.
std::optional<std::set<std::string>> parse_sections(const std::string &list, std::string *error) {
  std::set<std::string> chosen;
  if (list.empty()) {
    chosen.insert(full_check_sections().begin(), full_check_sections().end());
    return chosen;
  }
  llvm::SmallVector<llvm::StringRef, 8> names;
  llvm::StringRef(list).split(names, ',');
  for (llvm::StringRef name : names) {
    const std::string section = name.trim().str();
    const std::vector<std::string> &known = full_check_sections();
    if (std::find(known.begin(), known.end(), section) == known.end()) {
      *error = "--sections: '" + section + "' is no section; the sections are";
      for (const std::string &k : known)
        *error += " " + k;
      return std::nullopt;
    }
    chosen.insert(section);
  }
  return chosen;
}

/// One part of the full check: a section, for one precision or (math) for all.
struct CheckUnit {
  std::string section;
  std::optional<bench::Precision> precision;
  std::function<void()> run;
};

/// The full check's parts in the order they run: for each precision, the
/// sections `sections` names that apply to it.
std::vector<CheckUnit> check_units(bool full, const std::vector<bench::Precision> &precisions,
                                   const std::set<std::string> &sections) {
  std::vector<CheckUnit> units;
  auto add = [&](const char *section, std::optional<bench::Precision> p, std::function<void()> run) {
    if (sections.count(section))
      units.push_back({section, p, std::move(run)});
  };
  add("math", std::nullopt, [] { gpu_check::check_math_functions(); });
  for (bench::Precision p : precisions) {
    if (p == bench::Precision::FP32) {
      add("fp32", p, [full] {
        std::printf("\n==== fp32: the FFMA schedules ====\n");
        fp32_check(full);
      });
      add("batched", p, [p] { gpu_check::check_batched(p); }); // the FFMA schedule's batches
      add("strided", p, [p] { gpu_check::check_strided(p); }); // its views
    } else {
      add("mma", p, [p, full] { gpu_check::check_mma(p, full); });
      if (full || p != bench::Precision::F16)
        add("reduction-start", p, [p] { gpu_check::check_reduction_start(p); });
      add("k-major", p, [p] { gpu_check::check_k_major_b(p); });
      add("m-major", p, [p] { gpu_check::check_m_major_a(p); });
      add("tile-stores", p, [p] { gpu_check::check_tile_stores(p); });
      if (p != bench::Precision::TF32)
        add("consumer-schedules", p, [p] { gpu_check::check_consumer_schedules(p); });
      if (p != bench::Precision::TF32)
        add("persistent-clusters", p, [p] { gpu_check::check_persistent_clusters(p); });
      add("batched", p, [p] { gpu_check::check_batched(p); });
      add("strided", p, [p] {
        gpu_check::check_strided(p);
        if (p == bench::Precision::BF16)
          gpu_check::check_layout_matrix();
      });
      if (p == bench::Precision::BF16) {
        add("epilogues", p, [] { gpu_check::check_extra_epilogues(); });
        add("fp8", p, [] { gpu_check::check_fp8(); });
        add("fused-reductions", p, [] { gpu_check::check_fused_reductions(); });
      }
    }
    add("split-k", p, [p, full] { gpu_check::check_split_k(p, full); });
    if (p == bench::Precision::TF32)
      add("tf32-truncated", p, [] { gpu_check::check_tf32_truncated(); });
  }
  return units;
}

/// The full check; with `time_limit_s` > 0, no part starts once that many
/// seconds have passed (a part that started runs to its end), and the parts
/// left are printed as the commands that run them. Returns 1 if a check
/// failed, else 3 if parts were left, else 0.
int full_check(bool full, const std::vector<bench::Precision> &precisions, const std::set<std::string> &sections,
               double time_limit_s) {
  auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  gpu::Device &device = gpu::Device::get();
  std::printf("coalesce-gpu-check on %s (%d SMs), target %s, precisions", device.name().c_str(), device.sm_count(),
              target_for_current_device().sm().c_str());
  for (bench::Precision p : precisions)
    std::printf(" %s", reference::precision_name(p));
  std::printf("\n");
  // The parts left at the time limit, by precision ("" for math).
  std::map<std::string, std::vector<std::string>> left;
  std::vector<std::string> left_order;
  for (const CheckUnit &unit : check_units(full, precisions, sections)) {
    if (time_limit_s > 0 && elapsed() >= time_limit_s) {
      std::string key = unit.precision ? reference::precision_name(*unit.precision) : "";
      if (!left.count(key))
        left_order.push_back(key);
      left[key].push_back(unit.section);
      continue;
    }
    unit.run();
  }
  if (!left.empty()) {
    std::printf("\ntime limit of %.0f s reached after %.1f s; not run:\n", time_limit_s, elapsed());
    for (const std::string &key : left_order) {
      std::string list;
      for (const std::string &section : left[key])
        list += (list.empty() ? "" : ",") + section;
      std::printf("  coalesce-gpu-check%s%s --sections=%s\n", key.empty() ? "" : " --precisions=", key.c_str(),
                  list.c_str());
    }
  }
  if (gpu_check::print_summary(elapsed()))
    return 1;
  return left.empty() ? 0 : 3;
}

} // namespace

int main(int argc, char **argv) {
  // The flags, through llvm::cl as coalesce-aot's and coalesce-main's.
  namespace cl = llvm::cl;
  cl::OptionCategory category("coalesce-gpu-check options");
  cl::opt<std::string> precisions_flag(
      "precisions", cl::desc("comma-separated fp32 (the FFMA schedules), tf32, bf16, f16 (the tensor-core "
                             "schedules) or all; every precision also checks split-K at its five shapes"),
      cl::value_desc("list"), cl::init("all"), cl::cat(category));
  cl::opt<bool> full("full", cl::desc("the whole matrix: every fp32 schedule at the large cuBLAS shapes, every "
                                      "tensor-core variant for every precision at every shape, split-K at its five "
                                      "shapes (the default run checks a subset in a few minutes)"),
                     cl::cat(category));
  // cl::desc keeps a reference: the text must outlive the parse.
  const std::string sanitizer_help = "run the tuned fp32 default, the tensor-core schedules, split-K, FP8 and the "
                                     "fused SwiGLU once each at a ragged shape (" + kSanitizerShape.str() +
                                     " and near it), for compute-sanitizer";
  cl::opt<bool> sanitizer("sanitizer-case", cl::desc(sanitizer_help), cl::cat(category));
  cl::opt<std::string> sanitizer_cases("sanitizer-cases",
                                       cl::desc("with --sanitizer-case: the comma-separated groups to run (fp32, mma, "
                                                "split-k, k-major, fp8, swiglu, tile-stores, consumer-schedules, "
                                                "persistent-clusters, batched, strided, m-major, "
                                                "tf32-truncated; "
                                                "default: all)"),
                                       cl::value_desc("list"), cl::cat(category));
  cl::opt<std::string> sections_flag(
      "sections",
      cl::desc(
          "the full check's sections to run, comma-separated (math, fp32, mma, reduction-start, k-major, "
          "m-major, tile-stores, consumer-schedules, persistent-clusters, batched, strided, epilogues, fp8, "
          "fused-reductions, "
          "split-k, tf32-truncated; "
          "default: all); the bf16-only ones (epilogues, fp8, fused-reductions) run with bf16 among the "
          "precisions, tf32-truncated with tf32; fp32 runs fp32, batched and strided (its FFMA schedule's batches and "
          "views)"),
      cl::value_desc("list"), cl::cat(category));
  cl::opt<double> time_limit(
      "time-limit",
      cl::desc("seconds after which no further part (a section for one precision) of the full check starts; the "
               "parts left are printed as the commands that run them, and the exit status is 3 if nothing "
               "failed (0: no limit, the default)"),
      cl::value_desc("seconds"), cl::init(0), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  std::string errors;
  llvm::raw_string_ostream error_stream(errors);
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "checks every GPU schedule on the GPU against a double reference on the CPU,\n"
                                   "cuBLAS and the unfused chain.\n",
                                   &error_stream)) {
    std::fprintf(stderr, "coalesce-gpu-check: %s (see --help)\n", llvm::StringRef(errors).trim().str().c_str());
    return 2;
  }
  // The forms no GPU has run yet (scheduler/UnverifiedFeatures.h) are what
  // this program checks: the library refuses them everywhere else.
  setenv("COALESCE_ALLOW_UNVERIFIED", "1", 1);
  if (!(time_limit >= 0)) {
    std::fprintf(stderr, "coalesce-gpu-check: --time-limit=%g: give seconds, 0 or more\n", double(time_limit));
    return 2;
  }
  if (time_limit > 0 && sanitizer) {
    std::fprintf(stderr, "coalesce-gpu-check: --time-limit bounds the full check; --sanitizer-case runs its cases "
                         "whole\n");
    return 2;
  }
  if (full && sanitizer) {
    std::fprintf(stderr, "coalesce-gpu-check: --full and --sanitizer-case exclude each other; give one\n");
    return 2;
  }
  std::string group_error;
  std::optional<std::vector<void (*)()>> groups = parse_sanitizer_groups(sanitizer_cases, &group_error);
  if (!groups) {
    std::fprintf(stderr, "coalesce-gpu-check: %s\n", group_error.c_str());
    return 2;
  }
  std::string section_error;
  std::optional<std::set<std::string>> sections = parse_sections(sections_flag, &section_error);
  if (!sections) {
    std::fprintf(stderr, "coalesce-gpu-check: %s\n", section_error.c_str());
    return 2;
  }
  if (!sections_flag.empty() && sanitizer) {
    std::fprintf(stderr, "coalesce-gpu-check: --sections picks parts of the full check; with --sanitizer-case, "
                         "give --sanitizer-cases\n");
    return 2;
  }
  if (!sanitizer_cases.empty() && !sanitizer) {
    std::fprintf(stderr, "coalesce-gpu-check: --sanitizer-cases goes with --sanitizer-case\n");
    return 2;
  }
  std::string precision_error;
  std::vector<bench::Precision> precisions = bench::parse_precisions(precisions_flag, &precision_error);
  if (precisions.empty()) {
    std::fprintf(stderr, "coalesce-gpu-check: %s\n", precision_error.c_str());
    return 2;
  }
  std::string why_not;
  if (!gpu::gpu_available(&why_not)) {
    std::printf("no GPU: %s; skipping\n", why_not.c_str());
    return 0;
  }
  try {
    return sanitizer ? sanitizer_case(*groups) : full_check(full, precisions, *sections, time_limit);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "coalesce-gpu-check: error: %s\n", error.what());
  }
  return 1;
}
