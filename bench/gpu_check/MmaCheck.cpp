// The tensor-core schedule (schedule_gemm_mma with bench::mma_tiling for the
// shape) fused with bias + exact GELU, per precision: tf32 (f32 A, B and
// out), bf16 (bf16 A, B and out) and f16 (f16 A, B and out).
//
//   - 1x1x1, 127x129x131, 1024^3: against the double reference on the
//     inputs' exact values (tf32: rounded as the instruction rounds them), on
//     every row (every 7th and the last at 1024^3), and against cuBLAS;
//   - 4093x4091x4097, 8192x11008x4096: against cuBLAS of the same precision
//     on every element, and the double reference on 8 sampled rows;
//   - 67x45 at K = 1 and K = 3: against the double reference (an epilogue
//     applied inside the reduction would agree at K = 1 only).
// "cuBLAS" is cuBLAS's GEMM of the precision with an f32 output, plus bias and
// erf-GELU in double: the same f32 accumulation with no 16-bit rounding, so
// the tolerance is one rounding of our output (bench::tolerance). That GEMM is
// itself checked against the double reference on the sampled rows. Our output
// is also compared with cuBLASLt's GELU_BIAS (tanh GELU) of the precision.
//
// The output is poisoned (every byte 0xFF: NaN in f32, bf16 and f16) before
// each run, every element is read back and must be finite, and 64 KiB of
// poison past its end must be intact.

#include "bench/common/GemmPointers.h"
#include "bench/gpu_check/MmaCheck.h"

#include "bench/gpu_check/Report.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <array>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Comparison;
using bench::Precision;
using examples::Epilogue;

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
  size_t mn() const { return size_t(M) * N; }
};

const std::vector<Shape> kDoubleShapes = {{1, 1, 1}, {127, 129, 131}, {1024, 1024, 1024}};
const std::vector<Shape> kCublasShapes = {{4093, 4091, 4097}, {8192, 11008, 4096}};
const std::vector<Shape> kSmallKShapes = {{67, 45, 1}, {67, 45, 3}};
/// Rows the TMA can describe (N and K multiples of 8) with ragged edges:
/// M anywhere, N and K short of the tile and of the k step, K of one step.
const std::vector<Shape> kTmaShapes = {{131, 136, 200}, {1000, 1048, 1000}, {67, 64, 8}, {4093, 4096, 4104}};
/// Ragged in M, N and K (K not a multiple of the k step): every edge path.
const Shape kSanitizerShape{131, 133, 67};
constexpr size_t kGuardBytes = 1 << 16;
/// Above this many multiply-adds the double reference samples every 7th row.
constexpr double kFullReferenceMacs = 1 << 27;
constexpr int kCublasSampleRows = 8;

std::string name_of(Precision p, bool warpgroup = false, bool tma = false, int producer_warps = 0,
                    PaddedCopies padded = PaddedCopies::None, int producer_registers = 0, bool persistent = false,
                    bool clustered = false) {
  return std::string(tma && producer_warps ? "wgmma+tma+producer"
                     : tma                 ? "wgmma+tma"
                     : warpgroup           ? "wgmma"
                                           : "mma") +
         (tma && producer_warps && producer_registers ? "+registers" : "") + (persistent ? "+persistent" : "") +
         (tma && clustered ? "+multicast" : "") +
         (!tma || padded == PaddedCopies::None  ? " "
          : padded == PaddedCopies::WhereRagged ? "+padded-where-ragged "
          : padded == PaddedCopies::Both        ? "+padded "
                                                : str_cat("+padded-", padded_copies_name(padded), " ")) +
         reference::precision_name(p) + " (bias_gelu)";
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

/// Compiled pipelines, one per (precision, tiling).
class Kernels {
public:
  /// With `fixed`, the kernel's extents are that shape's, constants.
  const GpuExecutable &get(Precision p, const MmaTiling &tiling, const Shape *fixed = nullptr) {
    std::string key =
        std::string(reference::precision_name(p)) + "/" + tiling.str() + (fixed ? "/" + fixed->str() : "");
    std::unique_ptr<Pipeline> &pipeline = pipelines_[key];
    if (!pipeline) {
      examples::Gemm g = examples::make_gemm_with_extents(
          Epilogue::BiasGelu, bench::input_type(p), bench::output_type(p), fixed ? Expr(fixed->M) : Expr(),
          fixed ? Expr(fixed->N) : Expr(), fixed ? Expr(fixed->K) : Expr());
      schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
      pipeline = std::make_unique<Pipeline>(g.out);
    }
    return pipeline->gpu_executable(target_for_current_device());
  }

private:
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
};

/// One problem's data on the host and the device. `guard` bytes of poison
/// follow the output (0 for the exact-size sanitizer case).
struct Problem {
  Precision p;
  Shape s;
  examples::GemmData host;
  Buffer bias_out; // the bias in the output type, for cuBLASLt
  gpu::DeviceBuffer a, b, bias, bias_out_dev, out;
  size_t guard;
  std::vector<float> result; // our output, widened

  Problem(Precision precision, const Shape &shape, size_t guard_bytes)
      : p(precision), s(shape),
        host(examples::make_data(shape.M, shape.N, shape.K, 1 + shape.K, bench::input_type(precision))),
        bias_out({shape.N}, bench::output_type(precision)), guard(guard_bytes) {
    for (int j = 0; j < s.N; ++j) {
      host.bias.set(size_t(j), bench::bias_on_common_grid(host.bias.get(size_t(j))));
      bias_out.set(size_t(j), host.bias.get(size_t(j))); // exact: the value is on every type's grid
    }
    a = upload(host.a);
    b = upload(host.b);
    bias = upload(host.bias);
    bias_out_dev = upload(bias_out);
    out = gpu::DeviceBuffer(out_bytes() + guard);
  }

  size_t out_bytes() const { return s.mn() * size_t(bench::output_type(p).bytes()); }

  static gpu::DeviceBuffer upload(const Buffer &buffer) {
    gpu::DeviceBuffer device(buffer.size_in_bytes());
    device.upload(buffer.raw_data(), buffer.size_in_bytes());
    return device;
  }

  /// The M x N output-typed elements at `ptr`, widened to f32.
  std::vector<float> download_output(CUdeviceptr ptr) const {
    Buffer bits({s.M, s.N}, bench::output_type(p));
    gpu::cu_check(gpu::driver().memcpy_dtoh(bits.raw_data(), ptr, bits.size_in_bytes()), "cuMemcpyDtoH of ",
                  bits.size_in_bytes(), " bytes");
    std::vector<float> values(bits.size());
    for (size_t n = 0; n < values.size(); ++n)
      values[n] = bits.get(n);
    return values;
  }

  /// Runs our kernel into the poisoned output; reads it all back into
  /// `result`; counts what is not finite and the overwritten guard bytes.
  Outcome run(const GpuExecutable &exe) {
    Outcome o;
    o.ms = bench::launch_gemm_into_poisoned(exe, a.ptr(), b.ptr(), bias.ptr(), out, s.M, s.N, s.K);
    result = download_output(out.ptr());
    for (float v : result)
      o.not_finite += std::isfinite(v) ? 0 : 1;
    std::vector<uint8_t> guard_bytes(guard);
    if (guard)
      gpu::cu_check(gpu::driver().memcpy_dtoh(guard_bytes.data(), out.ptr() + out_bytes(), guard),
                    "cuMemcpyDtoH of the guard");
    for (uint8_t byte : guard_bytes)
      o.guard_damage += byte == 0xFF ? 0 : 1;
    return o;
  }
};

/// Sums A * B in double for `rows` (every column), from the inputs' exact
/// values; for tf32 each input is first rounded as the instruction rounds it.
struct DoubleSums {
  std::vector<int> rows;
  std::vector<double> sums; // rows.size() x N
};

DoubleSums double_sums(const Problem &pr, std::vector<int> rows) {
  const Shape &s = pr.s;
  const bool tf32 = pr.p == Precision::TF32;
  auto widen = [&](const Buffer &buffer, size_t n) {
    float v = buffer.get(n);
    return tf32 ? float_to_tf32(v) : v;
  };
  std::vector<float> b(size_t(s.K) * s.N);
  for (size_t n = 0; n < b.size(); ++n)
    b[n] = widen(pr.host.b, n);
  DoubleSums result{std::move(rows), {}};
  result.sums.assign(result.rows.size() * s.N, 0.0);
  for (size_t r = 0; r < result.rows.size(); ++r) {
    double *row = &result.sums[r * s.N];
    for (int k = 0; k < s.K; ++k) {
      const double a = widen(pr.host.a, size_t(result.rows[r]) * s.K + k);
      const float *b_row = &b[size_t(k) * s.N];
      for (int j = 0; j < s.N; ++j)
        row[j] += a * b_row[j];
    }
  }
  return result;
}

std::vector<int> all_or_sampled_rows(const Shape &s) {
  std::vector<int> rows;
  const int stride = double(s.M) * s.N * s.K > kFullReferenceMacs ? 7 : 1;
  for (int r = 0; r < s.M; r += stride)
    rows.push_back(r);
  if (rows.back() != s.M - 1)
    rows.push_back(s.M - 1);
  return rows;
}

std::vector<int> spread_rows(const Shape &s, int count) {
  std::vector<int> rows;
  for (int r = 0; r < count; ++r)
    rows.push_back(int(int64_t(r) * (s.M - 1) / std::max(count - 1, 1)));
  return rows;
}

/// ||got - want|| / ||want|| with want(n) in double over n in [0, count).
template <typename Want> double relative_error(const float *got, size_t count, Want want) {
  double diff = 0, norm = 0;
  for (size_t n = 0; n < count; ++n) {
    const double w = want(n), d = double(got[n]) - w;
    diff += d * d;
    norm += w * w;
  }
  if (!std::isfinite(diff) || !std::isfinite(norm))
    return std::numeric_limits<double>::infinity();
  return norm == 0 ? (diff == 0 ? 0 : std::numeric_limits<double>::infinity()) : std::sqrt(diff / norm);
}

/// `values` (M x N, row-major) on the sampled rows against gelu(sum + bias)
/// in double; `gelu` false compares with the plain sums.
double error_vs_double(const Problem &pr, const DoubleSums &ref, const std::vector<float> &values, bool gelu) {
  const int N = pr.s.N;
  std::vector<float> sampled(ref.rows.size() * N);
  for (size_t r = 0; r < ref.rows.size(); ++r)
    for (int j = 0; j < N; ++j)
      sampled[r * N + j] = values[size_t(ref.rows[r]) * N + j];
  return relative_error(sampled.data(), sampled.size(), [&](size_t n) {
    const double sum = ref.sums[n];
    return gelu ? gelu_erf(sum + pr.host.bias.get(n % N)) : sum;
  });
}

std::string rows_label(const DoubleSums &ref, const Shape &s) {
  return ref.rows.size() == size_t(s.M) ? "double (all rows)" : "double (" + std::to_string(ref.rows.size()) + " rows)";
}

/// Records a check whose comparison may throw.
template <typename Body> void guarded(const std::string &name, const Shape &s, const std::string &vs, Body body) {
  try {
    record(name, s.str(), vs, body());
  } catch (const std::exception &error) {
    Outcome o;
    o.failure = error.what();
    record(name, s.str(), vs, o);
  }
}

/// double_sums, kept per precision, shape and rows: the data of a shape is
/// the same for every schedule (seeded by the shape), and the sums of 586
/// rows of 4093 x 4096 x 4104 take seconds each time.
const DoubleSums &cached_double_sums(const Problem &pr, std::vector<int> rows) {
  static std::map<std::string, DoubleSums> cache;
  std::string key = std::string(reference::precision_name(pr.p)) + " " + pr.s.str();
  for (int r : rows)
    key += " " + std::to_string(r);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, double_sums(pr, std::move(rows))).first;
  return it->second;
}

/// Our kernel at one shape: against the double reference on `ref_rows`
/// (empty: none) and, with `cublas`, against cuBLAS and cuBLASLt.
void check_shape(Kernels &kernels, Precision p, const Shape &s, std::vector<int> ref_rows, bool cublas, bool warpgroup,
                 const MmaTiling *chosen = nullptr, bool fixed_extents = false) {
  const MmaTiling tiling =
      chosen ? *chosen : bench::mma_tiling(p, s.M, s.N, gpu::Device::get().sm_count(), warpgroup);
  const std::string name = name_of(p, warpgroup, tiling.uses_tma(), tiling.producer_warps, tiling.tma_padded_copies,
                                   tiling.producer_registers, tiling.persistent_blocks > 0, tiling.cluster_blocks > 1) +
                           (fixed_extents ? ", extents fixed" : "");
  std::unique_ptr<Problem> pr;
  Outcome run;
  try {
    pr = std::make_unique<Problem>(p, s, kGuardBytes);
    run = pr->run(kernels.get(p, tiling, fixed_extents ? &s : nullptr));
  } catch (const std::exception &error) {
    run.failure = error.what();
    record(name, s.str(), "(run)", run);
    return;
  }
  run.detail = tiling.str();
  const DoubleSums &sums = cached_double_sums(*pr, std::move(ref_rows));
  if (!sums.rows.empty()) {
    Outcome o = run;
    o.error = error_vs_double(*pr, sums, pr->result, true);
    o.tolerance = bench::tolerance(p, Comparison::OursVsDouble);
    record(name, s.str(), rows_label(sums, s), o);
  }
  if (!cublas)
    return;

  // cuBLAS's GEMM of this precision with an f32 output, checked itself first.
  const std::string cublas_name = std::string("cuBLAS ") + reference::precision_name(p) + " gemm (f32 out)";
  std::vector<float> ref;
  bool ref_ok = false;
  guarded(cublas_name, s, rows_label(sums, s), [&] {
    gpu::DeviceBuffer ref_dev(s.mn() * sizeof(float));
    ref_dev.fill_bytes(0xFF);
    reference::gemm(p, s.M, s.N, s.K, pr->a.as<void>(), pr->b.as<void>(), ref_dev.as<void>(), /*f32_output=*/true);
    gpu::synchronize();
    ref.resize(s.mn());
    ref_dev.download(ref);
    Outcome o;
    for (float v : ref)
      o.not_finite += std::isfinite(v) ? 0 : 1;
    o.error = error_vs_double(*pr, sums, ref, false);
    o.tolerance = bench::tolerance(p, Comparison::CublasVsDouble);
    ref_ok = o.not_finite == 0 && o.error <= o.tolerance;
    return o;
  });
  if (ref_ok) {
    Outcome o = run;
    o.error = relative_error(pr->result.data(), s.mn(),
                             [&](size_t n) { return gelu_erf(double(ref[n]) + pr->host.bias.get(n % s.N)); });
    o.tolerance = bench::tolerance(p, Comparison::OursVsCublas);
    record(name, s.str(), std::string("cuBLAS ") + reference::precision_name(p) + " + epi", o);
  }
  ref.clear();
  ref.shrink_to_fit();

  // cuBLASLt's fused GELU_BIAS of this precision, element for element.
  const std::string lt_vs = std::string("cuBLASLt ") + reference::precision_name(p) + " GELU_BIAS";
  try {
    gpu::DeviceBuffer lt_dev(pr->out_bytes());
    lt_dev.fill_bytes(0xFF);
    reference::lt_gelu_bias(p, s.M, s.N, s.K, pr->a.as<void>(), pr->b.as<void>(), pr->bias_out_dev.as<void>(),
                            lt_dev.as<void>());
    gpu::synchronize();
    const std::vector<float> lt = pr->download_output(lt_dev.ptr());
    Outcome o = run;
    o.error = relative_error(pr->result.data(), s.mn(), [&](size_t n) { return double(lt[n]); });
    o.tolerance = bench::tolerance(p, Comparison::OursVsLt);
    record(name, s.str(), lt_vs, o);
  } catch (const std::exception &error) {
    Outcome o;
    const std::string message = error.what();
    // No algorithm for an odd shape is cuBLASLt's limit, not our failure; the
    // cuBLAS comparison above still covers the shape.
    if (message.find("cuBLASLt has no") != std::string::npos)
      o.note = message;
    else
      o.failure = message;
    record(name, s.str(), lt_vs, o);
  }
}

} // namespace

void check_mma(Precision p, bool full) {
  std::printf("\n== tensor-core schedule, %s (%s A and B, %s out), bias + GELU ==\n", reference::precision_name(p),
              bench::input_type(p).str().c_str(), bench::output_type(p).str().c_str());
  Kernels kernels;
  // Both instruction families where the GPU has warpgroup MMAs.
  std::vector<bool> families = {false};
  if (bench::has_warpgroup_mma(p) && target_for_current_device().has_warpgroup_mma())
    families.push_back(true);
  for (bool warpgroup : families) {
    for (const Shape &s : kDoubleShapes)
      check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/true, warpgroup);
    for (const Shape &s : kCublasShapes)
      if (full || &s == &kCublasShapes.front())
        check_shape(kernels, p, s, spread_rows(s, kCublasSampleRows), /*cublas=*/true, warpgroup);
    for (const Shape &s : kSmallKShapes)
      check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, warpgroup);
  }
  // The warpgroup variants: f16's kernels are bf16's but for the element
  // type, so the default run leaves them to --full.
  const bool variants = full || p != Precision::F16;
  // A variant's check at the large shapes, against cuBLAS: --full only.
  auto large = [&](const Shape &s, const MmaTiling *tiling) {
    if (full)
      check_shape(kernels, p, s, spread_rows(s, kCublasSampleRows), /*cublas=*/true, true, tiling);
  };
  if (families.size() > 1 && variants) {
    // The warpgroup MMA over tiles staged once per step (no pipeline slots).
    MmaTiling single = bench::mma_tiling(p, 64, 64, gpu::Device::get().sm_count(), true);
    single.double_buffered = false;
    single.stages = 2;
    single.tma = false;
    for (const Shape &s : kDoubleShapes)
      check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &single);
    // The default warpgroup tiling copies with the TMA (where the rows are
    // not 16-byte multiples, the same kernel takes its cp.async copies):
    // the shapes the TMA describes with ragged edges, then the pipeline of
    // cp.async copies alone.
    for (const Shape &s : kTmaShapes)
      check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/s.M > 1000, true);
    for (bool tma : {false}) {
      for (const Shape &s : kDoubleShapes) {
        MmaTiling tiling = bench::mma_tiling(p, s.M, s.N, gpu::Device::get().sm_count(), true);
        tiling.tma = tma;
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &tiling);
      }
      MmaTiling tiling = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
      tiling.tma = tma;
      check_shape(kernels, p, kTmaShapes.back(), all_or_sampled_rows(kTmaShapes.back()), false, true, &tiling);
    }
    // Producer warps issue the TMA copies (warp specialization): one warp
    // and a warpgroup, on the default tilings and on 128 x 256 tiles of
    // two 64 x 256 warpgroups.
    bool tma_default = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true).uses_tma();
    for (int producers : {1, 4}) {
      if (!tma_default)
        break; // a default without the TMA's copies has no producer warps
      for (const Shape &s : kTmaShapes) {
        MmaTiling tiling = bench::mma_tiling(p, s.M, s.N, gpu::Device::get().sm_count(), true);
        tiling.producer_warps = producers;
        // A producer warpgroup leaves two blocks of 384 threads 80
        // registers each, too few for the MMAs' accumulators: one block.
        if (producers == 4)
          tiling.min_blocks_per_sm = 1;
        stage_values_where_sums_do_not_fit(tiling);
        fit_output_tile_beside_stages(tiling);
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/s.M > 1000, true, &tiling);
      }
      MmaTiling wide = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
      wide.block_n = wide.warp_n = 256;
      wide.min_blocks_per_sm = 1;
      wide.producer_warps = producers;
      // The output's tile beside the stages (three, and its values rather
      // than its sums: the default's four and its sums leave no room).
      stage_values_where_sums_do_not_fit(wide);
      fit_output_tile_beside_stages(wide);
      for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kDoubleShapes.front()})
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &wide);
      // Split-K: the combine's last_arrival meets the whole block,
      // producer warps included; the combine kernel after slices whose
      // producer warps leave.
      MmaTiling split = bench::mma_tiling(p, 64, 64, gpu::Device::get().sm_count(), true);
      split.producer_warps = producers;
      split.min_blocks_per_sm = 1;
      for (SplitKMode mode : kSplitKModes) {
        split.split_k = 3;
        split.split_k_mode = mode;
        check_shape(kernels, p, kTmaShapes.front(), all_or_sampled_rows(kTmaShapes.front()), false, true, &split);
      }
    }
    // Register reallocation: a producer warpgroup keeping 40 registers,
    // which leaves the kernel after its copies, and two 64 x 256 MMA
    // warpgroups taking the rest (232), at ragged shapes (one pipeline for
    // the partial last k step) and against cuBLAS.
    if (tma_default) {
      MmaTiling realloc = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
      realloc.block_n = realloc.warp_n = 256;
      realloc.min_blocks_per_sm = 1;
      realloc.producer_warps = 4;
      realloc.producer_registers = 40;
      stage_values_where_sums_do_not_fit(realloc);
      fit_output_tile_beside_stages(realloc); // three stages beside the output's tile
      for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kDoubleShapes.front(), kSanitizerShape})
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &realloc);
      for (const Shape &s : kSmallKShapes)
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &realloc);
      large(kCublasShapes.front(), &realloc);
      // The same with M, N and K fixed, whole tiles and K a multiple of 8:
      // no guard chooses the TMA or a full tile, so the producers leave
      // outside any, before the staged output tile's barriers, which count
      // the MMA warps alone.
      for (const Shape &s : {Shape{256, 512, 192}, Shape{1024, 1024, 1024}})
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &realloc, /*fixed_extents=*/true);
    }
    // A persistent grid (gpu_persistent_blocks): as many blocks as
    // multiprocessors, each walking tiles a grid apart, at ragged shapes,
    // the K = 1 / K = 3 pair, and against cuBLAS.
    {
      MmaTiling persistent = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
      persistent.persistent_blocks = gpu::Device::get().sm_count();
      stage_values_where_sums_do_not_fit(persistent);
      fit_output_tile_beside_stages(persistent);
      for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kDoubleShapes.front(), kSanitizerShape})
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &persistent);
      for (const Shape &s : kSmallKShapes)
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &persistent);
      large(kCublasShapes.front(), &persistent);
    }
    // A pipeline across a persistent block's tiles: a producer warpgroup,
    // with and without register reallocation, feeding two 64 x 256 MMA
    // warpgroups on a persistent grid of a block per multiprocessor and of
    // 7 blocks (which walk several tiles even at the small shapes), at
    // ragged shapes, the K = 1 / K = 3 pair, and against cuBLAS.
    if (tma_default) {
      for (int registers : {0, 40})
        for (int blocks : {gpu::Device::get().sm_count(), 7}) {
          MmaTiling across = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
          across.block_n = across.warp_n = 256;
          across.min_blocks_per_sm = 1;
          across.producer_warps = 4;
          across.producer_registers = registers;
          across.persistent_blocks = blocks;
          stage_values_where_sums_do_not_fit(across);
          fit_output_tile_beside_stages(across); // three stages beside the output's tile
          for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kDoubleShapes.front(), kSanitizerShape})
            check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &across);
          for (const Shape &s : kSmallKShapes)
            check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &across);
          if (blocks != 7)
            check_shape(kernels, p, kCublasShapes.front(), spread_rows(kCublasShapes.front(), kCublasSampleRows),
                        /*cublas=*/true, true, &across);
        }
    }
    // Clusters of 2 and 4 block rows sharing B's tiles (gpu_cluster,
    // multicast): odd numbers of block rows (a block past the output in
    // the last cluster), the K = 1 / K = 3 pair, ragged shapes, and the
    // default tiling against cuBLAS.
    // Then with a producer warp, and a producer warpgroup that reallocates
    // registers, issuing the copies, the MMA warps releasing each slot in
    // every block of the cluster.
    if (tma_default) {
      for (auto [blocks, producers, registers] :
           std::vector<std::array<int, 3>>{{2, 0, 0}, {4, 0, 0}, {2, 1, 0}, {2, 4, 40}, {4, 4, 40}}) {
        MmaTiling clustered = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
        clustered.cluster_blocks = blocks;
        clustered.producer_warps = producers;
        clustered.producer_registers = registers;
        stage_values_where_sums_do_not_fit(clustered);
        fit_output_tile_beside_stages(clustered);
        for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kDoubleShapes.front(), kSanitizerShape})
          check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &clustered);
        for (const Shape &s : kSmallKShapes)
          check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &clustered);
        check_shape(kernels, p, kCublasShapes.front(), spread_rows(kCublasShapes.front(), kCublasSampleRows),
                    /*cublas=*/true, true, &clustered);
      }
    }
    // Row-padded copies the TMA reads (tma_padded_copies): rows that are
    // not 16-byte multiples, the K = 1 / K = 3 pair, the ragged shape
    // against cuBLAS, and with rows that need no padding; then with a
    // producer warp and with K split.
    if (tma_default) {
      MmaTiling padded = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), true);
      padded.tma_padded_copies = PaddedCopies::Both;
      for (const Shape &s : kDoubleShapes)
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &padded);
      for (const Shape &s : kSmallKShapes)
        check_shape(kernels, p, s, all_or_sampled_rows(s), /*cublas=*/false, true, &padded);
      large(kCublasShapes.front(), &padded);
      check_shape(kernels, p, kTmaShapes.front(), all_or_sampled_rows(kTmaShapes.front()), false, true, &padded);
      MmaTiling producer = padded;
      producer.producer_warps = 1;
      check_shape(kernels, p, kSanitizerShape, all_or_sampled_rows(kSanitizerShape), false, true, &producer);
      MmaTiling split = bench::mma_tiling(p, 64, 64, gpu::Device::get().sm_count(), true);
      split.tma_padded_copies = PaddedCopies::Both;
      split.split_k = 3;
      check_shape(kernels, p, kSanitizerShape, all_or_sampled_rows(kSanitizerShape), false, true, &split);
      // One of them copied (what the default does where one input's rows
      // split sectors), the other read as it lies, or by the in-kernel
      // cp.async copies where its rows are not 16-byte multiples. tf32's
      // copies round both.
      for (PaddedCopies one : {PaddedCopies::A, PaddedCopies::B}) {
        if (p == Precision::TF32)
          break;
        MmaTiling single = padded;
        single.tma_padded_copies = one;
        for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kSanitizerShape})
          check_shape(kernels, p, s, all_or_sampled_rows(s), false, true, &single);
        for (const Shape &s : kSmallKShapes)
          check_shape(kernels, p, s, all_or_sampled_rows(s), false, true, &single);
      }
      // Each copied only on the launches whose rows of it are ragged, the
      // input itself read elsewhere: one kernel for every shape (the copies'
      // kernels not launched where their grids are empty), rows ragged and
      // whole in turn, with a producer warp, split, and against cuBLAS.
      if (p != Precision::TF32) { // tf32's copies round: always made
        MmaTiling ragged = padded;
        ragged.tma_padded_copies = PaddedCopies::WhereRagged;
        for (const Shape &s : kDoubleShapes)
          check_shape(kernels, p, s, all_or_sampled_rows(s), false, true, &ragged);
        for (const Shape &s : kSmallKShapes)
          check_shape(kernels, p, s, all_or_sampled_rows(s), false, true, &ragged);
        for (const Shape &s : {kTmaShapes.front(), kTmaShapes.back(), kSanitizerShape})
          check_shape(kernels, p, s, all_or_sampled_rows(s), false, true, &ragged);
        large(kCublasShapes.front(), &ragged);
        MmaTiling ragged_producer = ragged;
        ragged_producer.producer_warps = 1;
        check_shape(kernels, p, kSanitizerShape, all_or_sampled_rows(kSanitizerShape), false, true, &ragged_producer);
        MmaTiling ragged_split = split;
        ragged_split.tma_padded_copies = PaddedCopies::WhereRagged;
        check_shape(kernels, p, kSanitizerShape, all_or_sampled_rows(kSanitizerShape), false, true, &ragged_split);
      }
    }
  }
}

namespace {

// One kernel of a sanitizer case: run once on exact-size buffers (any
// overrun is memcheck's to find), compared with the double reference,
// recorded under `name`. `fixed`: compiled for that shape's extents.
void run_sanitizer_kernel(const std::string &name, Precision p, const Shape &s, const MmaTiling &tiling,
                          bool fixed = false) {
  try {
    Kernels kernels;
    Problem pr(p, s, /*guard_bytes=*/0);
    Outcome o = pr.run(kernels.get(p, tiling, fixed ? &s : nullptr));
    o.detail = tiling.str();
    const DoubleSums sums = double_sums(pr, all_or_sampled_rows(s));
    o.error = error_vs_double(pr, sums, pr.result, true);
    o.tolerance = bench::tolerance(p, Comparison::OursVsDouble);
    record(name, s.str(), rows_label(sums, s), o);
  } catch (const std::exception &error) {
    Outcome o;
    o.failure = error.what();
    record(name, s.str(), "double (all rows)", o);
  }
}

} // namespace

void mma_sanitizer_case() {
  mma_sanitizer_case(false);
  if (target_for_current_device().has_warpgroup_mma()) {
    mma_sanitizer_case(true);
    mma_sanitizer_case(true, true);
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/1);
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/0, /*padded=*/PaddedCopies::Both);
    // B alone copied; A's rows (67 elements) ragged: the in-kernel cp.async copies.
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/0, /*padded=*/PaddedCopies::B);
    // Copies made only where the rows are ragged: A's (67) are, B's are not.
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/0, /*padded=*/PaddedCopies::WhereRagged);
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/4, /*padded=*/PaddedCopies::None,
                       /*producer_registers=*/40);
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/0, /*padded=*/PaddedCopies::None,
                       /*producer_registers=*/0, /*persistent_blocks=*/3);
    // The pipeline across a persistent block's tiles, the producers
    // reallocating and leaving after their last tile.
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/4, /*padded=*/PaddedCopies::None,
                       /*producer_registers=*/40, /*persistent_blocks=*/3);
    // tf32: B copied transposed, element by element, and rounded in place;
    // then the TMA's form, from copies of A and B made by kernels of their
    // own (rounded, B transposed through shared memory).
    mma_sanitizer_case(true, false, Precision::TF32);
    mma_sanitizer_case(true, true, Precision::TF32, /*producer_warps=*/0, /*padded=*/PaddedCopies::Both);
    // Clusters of 2 block rows sharing B's tiles (multicast), an odd number
    // of block rows at the ragged shape.
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/0, /*padded=*/PaddedCopies::None,
                       /*producer_registers=*/0, /*persistent_blocks=*/0, /*cluster_blocks=*/2);
    mma_sanitizer_case(true, true, Precision::BF16, /*producer_warps=*/4, /*padded=*/PaddedCopies::None,
                       /*producer_registers=*/40, /*persistent_blocks=*/0, /*cluster_blocks=*/2);
    leaving_producers_fixed_whole_tiles_sanitizer_case();
    default_tiles_sanitizer_case();
  }
}

void leaving_producers_fixed_whole_tiles_sanitizer_case() {
  // Producers that reallocate registers and leave, M, N and K fixed to
  // whole 128 x 256 tiles and a K that is a multiple of 8: no guard is left
  // around the pipeline or the staged output tile, whose barriers count the
  // MMA warps alone after the producers' exit.
  const Shape s{256, 512, 192};
  MmaTiling tiling = bench::mma_tiling(Precision::BF16, 4096, 4096, gpu::Device::get().sm_count(), true);
  tiling.block_n = tiling.warp_n = 256;
  tiling.min_blocks_per_sm = 1;
  tiling.stages = 3;
  tiling.tile_stores = TileStores::ThroughShared;
  tiling.producer_warps = 4;
  tiling.producer_registers = 40;
  run_sanitizer_kernel("wgmma+tma+producer+registers bf16 (bias_gelu), extents fixed", Precision::BF16, s, tiling,
                       /*fixed=*/true);
}

void default_tiles_sanitizer_case() {
  // Each default warpgroup tiling the library picks for a large shape, run
  // at a small one with ragged tiles beside whole ones: a 128 x 192 tile
  // (3072^3), 128 x 128 at one block per SM (2048 x 5120 x 5120), 128 x 64
  // at four stages (1024^3), all stored through shared memory where whole,
  // and 64 x 64 at six stages split 4 ways (16 x 4096 x 4096).
  struct Case {
    Shape picked_for, run_at;
  };
  const Case cases[] = {{{3072, 3072, 3072}, {131, 392, 200}},
                        {{2048, 5120, 5120}, {131, 264, 200}},
                        {{1024, 1024, 1024}, {131, 136, 200}},
                        {{16, 4096, 4096}, {16, 136, 1000}}};
  for (const Case &c : cases) {
    const std::string name = "default for " + c.picked_for.str() + " " + reference::precision_name(Precision::BF16) +
                             " (bias_gelu)";
    run_sanitizer_kernel(name, Precision::BF16, c.run_at,
                         bench::mma_tiling_for_shape(Precision::BF16, c.picked_for.M, c.picked_for.N, c.picked_for.K,
                                                     gpu::Device::get().sm_count(), true));
  }
}

void mma_sanitizer_case(bool warpgroup, bool tma, Precision p, int producer_warps, PaddedCopies padded,
                        int producer_registers, int persistent_blocks, int cluster_blocks) {
  // The TMA's case at a shape whose rows it can describe, ragged in M and
  // N (K % 8 != 0 would take the cp.async copies, checked above); with
  // padded copies, rows it cannot (the copies' own kernels run too).
  // 128 x 256 tiles (with reallocated registers) get N = 264: one whole
  // tile, which stores through shared memory, beside ragged ones.
  const Shape s = tma && padded == PaddedCopies::None
                      ? Shape{kSanitizerShape.M, producer_registers > 0 ? 264 : 136, 200}
                      : kSanitizerShape;
  const std::string name =
      name_of(p, warpgroup, tma, producer_warps, padded, producer_registers, persistent_blocks > 0, cluster_blocks > 1);
  MmaTiling tiling = bench::mma_tiling(p, s.M, s.N, gpu::Device::get().sm_count(), warpgroup);
  tiling.tma = warpgroup && tma;
  tiling.producer_warps = producer_warps;
  tiling.tma_padded_copies = padded;
  if (producer_registers > 0) { // 128 x 256 tiles of two 64 x 256 MMA warpgroups, one block per SM
    tiling.block_m = 128;
    tiling.warp_m = 64;
    tiling.block_n = tiling.warp_n = 256;
    tiling.min_blocks_per_sm = 1;
    // Three stages beside the output's tile in shared memory, so that the
    // sanitizers see its writes, barriers and vector copies too.
    tiling.stages = 3;
    tiling.tile_stores = TileStores::ThroughShared;
    tiling.producer_registers = producer_registers;
  }
  tiling.persistent_blocks = persistent_blocks; // fewer blocks than tiles: each walks several
  tiling.cluster_blocks = cluster_blocks;
  run_sanitizer_kernel(name, p, s, tiling);
}

} // namespace coalesce::gpu_check
