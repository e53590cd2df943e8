#include "bench/gpu_check/Tf32TruncatedCheck.h"

#include "bench/common/Precisions.h"
#include "bench/gpu_check/Report.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
};

struct Path {
  std::string name;
  MmaTiling tiling;
  bool w_stored_n_by_k;
};

// out(i, j) = acc(i, j), or gelu(acc(i, j) + bias(j)) with `bias_gelu`,
// acc(i, j) = sum over k of A(i, k) * W(k, j) (or W(j, k) for a W stored
// N x K), on the path's tiling.
Func scheduled_gemm(const Path &path, bool bias_gelu) {
  Param Mp("M"), Np("N"), Kp("K");
  Input A("A", Float(32), {Mp, Kp}), bias("bias", Float(32), {Np});
  Input W = path.w_stored_n_by_k ? Input("W", Float(32), {Np, Kp}) : Input("W", Float(32), {Kp, Np});
  Var i("i"), j("j");
  RDom k(0, Kp, "k");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * (path.w_stored_n_by_k ? W(j, k) : W(k, j));
  out(i, j) = bias_gelu ? gelu(acc(i, j) + bias(j)) : acc(i, j);
  schedule_gemm_mma(out, acc, A, W, i, j, k, path.tiling);
  return out;
}

// The schedule compiled once, run at each shape: the output compared with
// the double reference on truncated operands, and at K = 1 without an
// epilogue (`exact`) element by element with the host's product.
void check_path(const Path &path, const std::vector<Shape> &shapes, bool exact) {
  const std::string name = "tf32 (truncated) " + path.name + (exact ? ", one product" : "");
  std::optional<Pipeline> pipeline;
  std::string failure;
  try {
    pipeline.emplace(scheduled_gemm(path, !exact));
  } catch (const std::exception &error) {
    failure = error.what();
  }
  for (const auto &[M, N, K] : shapes) {
    const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    Outcome o;
    o.detail = path.tiling.str();
    o.failure = failure;
    if (pipeline) {
      try {
        // Data drawn at random: values whose low 13 bits are not zero.
        examples::GemmData data = examples::make_data(M, N, K, 41 + K, Float(32));
        Buffer w = path.w_stored_n_by_k ? Buffer({N, K}) : data.b;
        if (path.w_stored_n_by_k)
          for (int r = 0; r < K; ++r)
            for (int c = 0; c < N; ++c)
              w.set(c, r, data.b.at(r, c));
        Buffer result({M, N});
        result.poison();
        Arguments args{{"A", data.a}, {"W", w}, {"M", M}, {"N", N}, {"K", K}};
        if (!exact)
          args.emplace("bias", data.bias);
        pipeline->realize_on_gpu(args, result);
        Buffer want({M, N}), got({M, N});
        size_t differing = 0;
        for (int r = 0; r < M; ++r)
          for (int c = 0; c < N; ++c) {
            double sum = 0;
            for (int kk = 0; kk < K; ++kk)
              sum += double(float_truncated_to_tf32(data.a.at(r, kk))) * double(float_truncated_to_tf32(data.b.at(kk, c)));
            want(r, c) = exact ? float(sum)
                               : float(examples::reference_epilogue<double>(examples::Epilogue::BiasGelu, sum,
                                                                            data.bias.get(size_t(c))));
            got(r, c) = result.at(r, c);
            differing += exact && std::memcmp(&want(r, c), &got(r, c), 4) != 0;
          }
        o.not_finite = examples::count_nan(got);
        if (exact) {
          // Bit for bit: the count of elements that differ (0 allowed).
          o.error = double(differing);
          o.tolerance = 0.5;
        } else {
          o.error = examples::relative_error(got, want);
          o.tolerance = bench::tolerance(bench::Precision::TF32, bench::Comparison::OursVsDouble);
        }
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, shape, exact ? "truncated product (elements differing)" : "double (all rows)", o);
  }
}

// Special values at K = 1 (one product each, every pair of them): zeros of
// both signs, the smallest and largest normals and subnormals, products
// that overflow or underflow, low mantissa bits that truncation drops,
// infinities, a quiet NaN and one whose payload lies in the dropped bits.
// The GPU's output against the host's run of the same pipeline, bit for
// bit (any NaN matches any NaN): where the tensor cores treat one of these
// differently from truncate_to_tf32 (flushing subnormals, say), it shows.
void check_special_values(const Path &path) {
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x3F800000u, 0xBF800000u, 0x00800000u, 0x00400000u,
                               0x007FFFFFu, 0x00000001u, 0x7F7FFFFFu, 0x3F800001u, 0x3F801800u, 0x3FC00000u,
                               0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0x1F800000u, 0x60000000u};
  const int n = static_cast<int>(sizeof specials / sizeof specials[0]);
  const std::string name = "tf32 (truncated) " + path.name + ", special values";
  Outcome o;
  o.detail = path.tiling.str();
  try {
    Pipeline pipeline(scheduled_gemm(path, false));
    Buffer a({n, 1}), w = path.w_stored_n_by_k ? Buffer({n, 1}) : Buffer({1, n});
    for (int r = 0; r < n; ++r) {
      float v;
      std::memcpy(&v, &specials[r], 4);
      a.set(r, 0, v);
      path.w_stored_n_by_k ? w.set(r, 0, v) : w.set(0, r, v);
    }
    Arguments args{{"A", a}, {"W", w}, {"M", n}, {"N", n}, {"K", 1}};
    Buffer gpu({n, n}), host({n, n});
    gpu.poison();
    host.poison();
    pipeline.realize_on_gpu(args, gpu);
    pipeline.realize_on_cpu(args, host);
    size_t differing = 0;
    std::string first;
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) {
        float g = gpu.at(r, c), h = host.at(r, c);
        if ((std::isnan(g) && std::isnan(h)) || std::memcmp(&g, &h, 4) == 0)
          continue;
        if (differing++ == 0) {
          char text[160];
          std::snprintf(text, sizeof text, "; first: 0x%08x * 0x%08x gave %a on the GPU, %a on the host", specials[r],
                        specials[c], g, h);
          first = text;
        }
      }
    o.error = double(differing);
    o.tolerance = 0.5;
    o.detail += first;
  } catch (const std::exception &error) {
    o.failure = error.what();
  }
  record(name, "18x18x1", "the host's run (elements differing)", o);
}

// The paths the GPU has: the warp MMA with B stored either way, and on
// sm_90a the warpgroup MMA with cp.async copies and with the TMA (B stored
// K x N through its transposed copy, N x K as it lies).
std::vector<Path> paths_on_this_gpu() {
  const int sms = gpu::Device::get().sm_count();
  MmaTiling warp = default_mma_tiling(MmaKind::TF32Truncated_m16n8k8, 4096, 4096, sms);
  std::vector<Path> paths = {{"mma, B(k, j)", warp, false}, {"mma, W(j, k)", warp, true}};
  if (target_for_current_device().has_warpgroup_mma()) {
    MmaTiling group = default_mma_tiling(MmaKind::TF32Truncated_wgmma_m64k8, 4096, 4096, sms);
    MmaTiling async = group;
    async.tma = false;
    async.block_n = async.warp_n = 128;
    paths.push_back({"wgmma, B(k, j), cp.async", async, false});
    paths.push_back({"wgmma+tma, B(k, j) through its transposed copy", group, false});
    paths.push_back({"wgmma+tma, W(j, k) as it lies", group, true});
  }
  return paths;
}

} // namespace

void check_tf32_truncated() {
  std::printf("\n== tf32 truncated: f32 operands as the tensor cores read them ==\n");
  const std::vector<Shape> one_product = {{131, 133, 1}, {64, 256, 1}};
  const std::vector<Shape> ragged = {{131, 133, 67}, {67, 45, 1}, {67, 45, 3}, {1000, 1000, 1000}};
  const std::vector<Shape> tma = {{131, 136, 200}, {67, 64, 8}, {1000, 1048, 1000}, {300, 520, 4104}};
  for (const Path &path : paths_on_this_gpu()) {
    check_path(path, one_product, true);
    check_special_values(path);
    check_path(path, path.tiling.uses_tma() ? tma : ragged, false);
    if (path.tiling.uses_tma())
      check_path(path, {{67, 45, 1}, {67, 45, 3}}, false);
  }
}

void tf32_truncated_sanitizer_case() {
  for (const Path &path : paths_on_this_gpu())
    check_path(path, {path.tiling.uses_tma() ? Shape{131, 136, 200} : Shape{131, 133, 67}}, false);
}

} // namespace coalesce::gpu_check
