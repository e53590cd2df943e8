// Reductions split across GPU blocks (split_k), GEMM + bias + exact GELU:
//
//   - the five shapes split-K is for (16x4096x4096, 64x11008x4096,
//     128x4096x16384, 512x512x32768, 256x256x65536) with the default
//     schedule of the precision at that shape (default_gemm_tiling or
//     default_mma_tiling with K and the device's SM count, which split K
//     there), in deterministic mode launched twice: the two outputs must be
//     the same bits; then in atomic mode. Each against the double reference
//     on 8 sampled rows (every column), tolerance 1e-4 (sums of up to 65536
//     exact products in f32; tf32 inputs rounded as the instruction does);
//   - 67x45 at K = 1 and K = 3 with a forced 3-way split of a 32x64 tile (so
//     that two of three slices are empty at K = 1) against the double
//     reference: an epilogue run per slice agrees at neither;
//   - only the last block row split (split_k_tail), deterministic and
//     atomic, at 67x45 (K = 1, 3), 131x133x4099 and 1536x8960x1536, on the
//     warpgroup MMA's default tile (the small one without it);
//   - every combine mode (deterministic, atomic, combine-kernel; the two
//     deterministic ones launched twice), and the combine kernel behind
//     128 x 256 warpgroup tiles in 66 slices at 256x256x65536 and the
//     ragged 131x133x4099.
// Outputs are f32 (tensor cores too: the check is of the sum, not of the
// output's rounding). The output is poisoned (0xFF) before each launch and
// every element read back must be finite.

#include "bench/gpu_check/SplitKCheck.h"

#include "bench/common/GemmPointers.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;
using examples::Epilogue;

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
  size_t mn() const { return size_t(M) * N; }
};

const std::vector<Shape> kSplitShapes = {
    {16, 4096, 4096}, {64, 11008, 4096}, {128, 4096, 16384}, {512, 512, 32768}, {256, 256, 65536}};
const std::vector<Shape> kSmallKShapes = {{67, 45, 1}, {67, 45, 3}};
const Shape kSanitizerShape{131, 133, 67};
constexpr int kSampleRows = 8;
/// Sums of up to 65536 f32 terms against double: the cuBLAS tolerance.
constexpr double kTolerance = 1e-4;

/// One problem on the host and the device; the output is f32.
struct Problem {
  Shape s;
  examples::GemmData host;
  gpu::DeviceBuffer a, b, bias, out;

  /// `tf32`: A and B rounded to tf32 first, as the instruction rounds them,
  /// so that the reference sees the values multiplied.
  Problem(const Shape &shape, Type in, bool tf32)
      : s(shape), host(examples::make_data(shape.M, shape.N, shape.K, 17 + shape.K, in)) {
    if (tf32)
      for (Buffer *operand : {&host.a, &host.b})
        for (float &v : operand->values())
          v = float_to_tf32(v);
    a = upload(host.a);
    b = upload(host.b);
    bias = upload(host.bias);
    out = gpu::DeviceBuffer(std::max<size_t>(s.mn() * sizeof(float), 16));
  }
  static gpu::DeviceBuffer upload(const Buffer &buffer) {
    gpu::DeviceBuffer device(std::max<size_t>(buffer.size_in_bytes(), 16));
    if (buffer.size_in_bytes())
      gpu::cu_check(gpu::driver().memcpy_htod(device.ptr(), buffer.raw_data(), buffer.size_in_bytes()),
                    "cuMemcpyHtoD of ", buffer.size_in_bytes(), " bytes");
    return device;
  }

  /// Launches `exe` into a poisoned output and reads it back; the workspace
  /// is the executable's own (kept between launches).
  std::vector<float> run(const GpuExecutable &exe, double *ms) {
    *ms = bench::launch_gemm_into_poisoned(exe, a.ptr(), b.ptr(), bias.ptr(), out, s.M, s.N, s.K);
    std::vector<float> result(s.mn());
    if (!result.empty())
      gpu::cu_check(gpu::driver().memcpy_dtoh(result.data(), out.ptr(), result.size() * sizeof(float)),
                    "cuMemcpyDtoH of the output");
    return result;
  }

  /// ||got - want|| / ||want|| on kSampleRows rows (all of them when M is
  /// smaller), want = gelu(sum + bias) in double on the inputs' exact values.
  double error(const std::vector<float> &got) const {
    return sampled_bias_gelu_error(host, s.M, s.N, s.K, kSampleRows, got);
  }
};

size_t not_finite(const std::vector<float> &values) {
  size_t count = 0;
  for (float v : values)
    count += std::isfinite(v) ? 0 : 1;
  return count;
}

/// The tiling a check runs: the default of the precision at the shape (the
/// warp MMA's for tensor cores) or the warpgroup MMA's default; or a forced
/// split count on a small tile (the K = 1 / K = 3 pair, several tiles at
/// small shapes), or on the warpgroup MMA's largest (128 x 256, two
/// warpgroups), which the combine kernel is for; or the warpgroup MMA's
/// default tile (the small one without it) with only its last block row
/// split (split_k_tail), the others whole.
enum class SplitTiling { Default, WarpgroupDefault, Small, Wide, Tail };

/// The schedule of precision p at s (`tiling`), with the combine `mode`;
/// the forced split count `slices` for Small and Wide.
std::unique_ptr<Pipeline> pipeline_for(Precision p, const Shape &s, SplitKMode mode, int slices, SplitTiling tiling,
                                       std::string *detail) {
  int sm_count = gpu::Device::get().sm_count();
  examples::Gemm g = examples::make_gemm(Epilogue::BiasGelu, bench::input_type(p), Float(32));
  if (p == Precision::FP32) {
    GemmTiling t = default_gemm_tiling(s.M, s.N, s.K, sm_count);
    if (tiling == SplitTiling::Small || tiling == SplitTiling::Tail) {
      t = GemmTiling();
      t.block_m = 32;
      t.block_n = 64;
      t.threads_m = 8;
      t.threads_n = 16;
      t.split_k = slices;
    }
    t.split_k_mode = mode;
    *detail = t.str();
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    if (tiling == SplitTiling::Tail) {
      g.out.split_k_tail(Var("bi"), 1);
      *detail += ", the last block row split, the others whole";
    }
  } else {
    const bool warpgroup = tiling == SplitTiling::WarpgroupDefault || tiling == SplitTiling::Wide ||
                           (tiling == SplitTiling::Tail && target_for_current_device().has_warpgroup_mma());
    MmaTiling t = tiling == SplitTiling::Wide
                      ? default_mma_tiling(bench::mma_kind(p, warpgroup), 4096, 4096, sm_count)
                      : default_mma_tiling(bench::mma_kind(p, warpgroup), s.M, s.N, s.K, sm_count);
    if (tiling == SplitTiling::Small || (tiling == SplitTiling::Tail && !warpgroup)) {
      t.block_m = t.block_n = 64;
      t.warp_m = t.warp_n = 32;
    } else if (tiling == SplitTiling::Wide) {
      t.tile_stores = TileStores::Direct; // the slices store f32 partial sums, not the tile
    }
    if (tiling == SplitTiling::Small || tiling == SplitTiling::Wide || tiling == SplitTiling::Tail)
      t.split_k = slices;
    if (tiling == SplitTiling::Tail)
      t.split_k_tail_rows = 1;
    t.split_k_mode = mode;
    *detail = t.str();
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  }
  return std::make_unique<Pipeline>(g.out);
}

std::string name_of(Precision p, SplitKMode mode, SplitTiling tiling) {
  return std::string(tiling == SplitTiling::Tail ? "split-K tail " : "split-K ") + reference::precision_name(p) + " " +
         split_k_mode_name(mode) + " (bias_gelu)";
}

// Every precision sums exact f32 products in f32 here (the output is f32).
double tolerance(Precision) { return kTolerance; }

/// One shape in one mode: against the reference, and (deterministic) the
/// same bits on a second launch.
void check_one(Precision p, const Shape &s, SplitKMode mode, int slices, SplitTiling tiling) {
  Outcome o;
  o.tolerance = tolerance(p);
  std::string name = name_of(p, mode, tiling);
  try {
    std::unique_ptr<Pipeline> pipeline = pipeline_for(p, s, mode, slices, tiling, &o.detail);
    const GpuExecutable &exe = pipeline->gpu_executable(target_for_current_device());
    Problem problem(s, bench::input_type(p), p == Precision::TF32);
    std::vector<float> first = problem.run(exe, &o.ms);
    o.not_finite = not_finite(first);
    o.error = problem.error(first);
    record(name, s.str(), "double (" + std::to_string(std::min(kSampleRows, s.M)) + " rows)", o);
    if (mode == SplitKMode::Atomic)
      return;
    double ms = 0;
    std::vector<float> second = problem.run(exe, &ms);
    size_t differ = 0;
    for (size_t n = 0; n < first.size(); ++n)
      differ += std::memcmp(&first[n], &second[n], sizeof(float)) != 0;
    Outcome bits;
    bits.error = first.empty() ? 0 : double(differ) / double(first.size());
    bits.tolerance = 0;
    bits.ms = ms;
    bits.detail = std::to_string(differ) + " of " + std::to_string(first.size()) + " differ";
    record(name, s.str(), "same bits, 2nd launch", bits);
  } catch (const std::exception &error) {
    o.failure = error.what();
    record(name, s.str(), "double", o);
  }
}

} // namespace

void check_split_k(Precision p, bool full) {
  std::printf("\n==== split-K, %s: %s, the K = 1 / K = 3 pair ====\n", reference::precision_name(p),
              full ? "the five shapes" : "the first and last of its five shapes (--full: all)");
  for (const Shape &s : kSplitShapes) {
    if (!full && &s != &kSplitShapes.front() && &s != &kSplitShapes.back())
      continue;
    for (SplitKMode mode : kSplitKModes)
      check_one(p, s, mode, 0, SplitTiling::Default);
  }
  for (const Shape &s : kSmallKShapes)
    for (SplitKMode mode : kSplitKModes)
      check_one(p, s, mode, 3, SplitTiling::Small);
  // Only the last block row split (split_k_tail): whole tiles and slices in
  // one grid, the K = 1 / K = 3 pair, ragged, and a last wave of slices.
  for (const Shape &s : {kSmallKShapes[0], kSmallKShapes[1], Shape{131, 133, 4099}, Shape{1536, 8960, 1536}})
    for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic})
      check_one(p, s, mode, 4, SplitTiling::Tail);
  if (p == Precision::FP32 || !target_for_current_device().has_warpgroup_mma())
    return;
  // The warpgroup MMA's defaults at the five shapes, as the benchmark runs
  // them (deep K: the combine kernel, 128 x 128 tiles where they split
  // into few slices), and the combine kernel behind its largest tiles,
  // cut into as many slices as fill the H200 (66 at 256 x 256: 2 tiles),
  // at a ragged shape too.
  for (const Shape &s : kSplitShapes)
    check_one(p, s,
              default_mma_tiling(bench::mma_kind(p, true), s.M, s.N, s.K, gpu::Device::get().sm_count()).split_k_mode,
              0, SplitTiling::WarpgroupDefault);
  for (const Shape &s : {Shape{256, 256, 65536}, Shape{131, 133, 4099}})
    check_one(p, s, SplitKMode::CombineKernel, 66, SplitTiling::Wide);
}

void split_k_sanitizer_case() {
  for (SplitKMode mode : kSplitKModes) {
    check_one(Precision::FP32, kSanitizerShape, mode, 3, SplitTiling::Small);
    check_one(Precision::BF16, kSanitizerShape, mode, 3, SplitTiling::Small);
  }
  for (Precision p : {Precision::FP32, Precision::BF16})
    check_one(p, kSanitizerShape, SplitKMode::Deterministic, 3, SplitTiling::Tail);
  if (target_for_current_device().has_warpgroup_mma())
    check_one(Precision::BF16, kSanitizerShape, SplitKMode::CombineKernel, 5, SplitTiling::Wide);
}

} // namespace coalesce::gpu_check
