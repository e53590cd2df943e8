#include "bench/gpu_check/Fp8Check.h"

#include "bench/gpu_check/Report.h"
#include "dsl/Error.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// A 1-D kernel out(i) = cast(to, x(i)), 128 threads per block.
Pipeline conversion(Type from, Type to) {
  Param n("n");
  Input x("x", from, {n});
  Var i("i"), bi("bi"), ti("ti");
  Func out("out");
  out(i) = cast(to, x(i));
  out.split(i, bi, ti, 128).gpu_blocks({bi}).gpu_threads({ti});
  return Pipeline(out);
}

// Every code of `type` widened on the GPU, against the runtime's exact
// widening (a NaN must stay a NaN).
void check_widening(Type type) {
  Outcome o;
  try {
    const int n = 256;
    Buffer codes({n}, type), widened({n});
    for (int c = 0; c < n; ++c)
      static_cast<uint8_t *>(codes.raw_data())[c] = uint8_t(c);
    conversion(type, Float(32)).realize_on_gpu({{"x", codes}, {"n", n}}, widened);
    for (int c = 0; c < n; ++c) {
      float want = narrow_bits_to_float(type, uint16_t(c)), got = widened.get(size_t(c));
      bool same = std::isnan(want) ? std::isnan(got) : bits_of(want) == bits_of(got);
      o.error += same ? 0 : 1;
    }
  } catch (const std::exception &error) {
    o.failure = error.what();
  }
  o.detail = "codes that widened to another f32";
  record(str_cat("widen ", type, " -> f32"), "256 codes", "runtime, bit for bit", o);
}

// f32 probes narrowed on the GPU (cvt.rn.satfinite), against the runtime's
// narrowing: every f32 near each code (ties among them), the formats'
// edges, infinities and NaN.
void check_narrowing(Type type) {
  Outcome o;
  try {
    std::vector<float> probes = {0.0f,     -0.0f,  INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(),
                                 1e30f,    -1e30f, 448.0f,   464.0f,    57344.0f,
                                 61440.0f, 1e-10f, -1e-10f};
    for (int c = 0; c < 256; ++c) {
      float v = narrow_bits_to_float(type, uint16_t(c)), next = narrow_bits_to_float(type, uint16_t((c + 1) & 0xFF));
      if (std::isnan(v) || std::isnan(next))
        continue;
      probes.push_back(v);
      probes.push_back((v + next) / 2); // a tie, or between codes across a sign
      probes.push_back(std::nextafter(v, INFINITY));
      probes.push_back(std::nextafter(v, -INFINITY));
    }
    const int n = int(probes.size());
    Buffer x({n}), narrowed({n}, type);
    for (int p = 0; p < n; ++p)
      x.set(size_t(p), probes[size_t(p)]);
    conversion(Float(32), type).realize_on_gpu({{"x", x}, {"n", n}}, narrowed);
    for (int p = 0; p < n; ++p)
      o.error +=
          static_cast<const uint8_t *>(narrowed.raw_data())[p] == float_to_narrow_bits(type, probes[size_t(p)]) ? 0 : 1;
    o.detail = str_cat(n, " probes; probes that narrowed to another code");
  } catch (const std::exception &error) {
    o.failure = error.what();
  }
  record(str_cat("narrow f32 -> ", type), "probes", "runtime, bit for bit", o);
}

// out = bf16(gelu(acc * a_scale(i) * w_scale(j) + bias(j))), acc(i, j) +=
// A(i, k) * W(j, k), FP8 A and W; `t` null: the FFMA schedule.
struct Fp8Linear {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A, W, a_scale{"a_scale", Float(32), {M}}, w_scale{"w_scale", Float(32), {N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Func acc{"acc"}, out{"out"};
  Fp8Linear(Type type, const MmaTiling *t) : A("A", type, {M, K}), W("W", type, {N, K}) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * W(j, k);
    out(i, j) = cast(BFloat(16), gelu(acc(i, j) * a_scale(i) * w_scale(j) + bias(j)));
    if (t) {
      schedule_gemm_mma(out, acc, A, W, i, j, k, *t);
      return;
    }
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    RVar ko("ko"), ki("ki");
    out.tile(i, j, bi, bj, ii, jj, 32, 32)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update()
        .split(k, ko, ki, 8)
        .reorder({ko, ti, tj, ki, ri, rj})
        .unroll(ki)
        .stage_in_shared(A, ko)
        .stage_in_shared(W, ko);
  }
};

void check_linear(Type type, const std::string &form, std::optional<MmaTiling> tiling,
                  const std::vector<Shape> &shapes) {
  const std::string name = str_cat("fp8 ", form, " ", type, " (scales, bias_gelu, bf16 out)");
  std::optional<Fp8Linear> g;
  std::optional<Pipeline> pipeline;
  std::string failure;
  try {
    g.emplace(type, tiling ? &*tiling : nullptr);
    pipeline.emplace(g->out);
  } catch (const std::exception &error) {
    failure = error.what();
  }
  for (const Shape &s : shapes) {
    Outcome o;
    o.failure = failure;
    o.detail = tiling ? tiling->str() : "FFMA, 32 x 32 tiles";
    if (pipeline) {
      try {
        Buffer A({s.M, s.K}, type), W({s.N, s.K}, type), a_scale({s.M}), w_scale({s.N}), bias({s.N});
        Buffer out({s.M, s.N}, BFloat(16));
        A.fill_random(21 + uint32_t(s.K));
        W.fill_random(22 + uint32_t(s.K));
        bias.fill_random(23);
        for (int r = 0; r < s.M; ++r)
          a_scale.set(size_t(r), 0.5f + 0.01f * float(r % 7));
        for (int c = 0; c < s.N; ++c)
          w_scale.set(size_t(c), 2.0f - 0.02f * float(c % 5));
        out.poison();
        pipeline->realize_on_gpu({{"A", A},
                                  {"W", W},
                                  {"a_scale", a_scale},
                                  {"w_scale", w_scale},
                                  {"bias", bias},
                                  {"M", s.M},
                                  {"N", s.N},
                                  {"K", s.K}},
                                 out);
        double error = 0, norm = 0;
        for (int r = 0; r < s.M; ++r)
          for (int c = 0; c < s.N; ++c) {
            double sum = 0;
            for (int x = 0; x < s.K; ++x)
              sum += double(A.at(r, x)) * double(W.at(c, x));
            double pre = sum * a_scale.get(size_t(r)) * w_scale.get(size_t(c)) + bias.get(size_t(c));
            double want = 0.5 * pre * (1.0 + std::erf(pre / std::sqrt(2.0)));
            double got = out.at(r, c);
            if (!std::isfinite(got)) {
              ++o.not_finite;
              continue;
            }
            error += (got - want) * (got - want);
            norm += want * want;
          }
        o.error = std::sqrt(error / std::max(norm, 1e-30));
        // The products are exact and their f32 sums nearly; the bf16 output
        // rounds each element once (2^-9 relative).
        o.tolerance = 4e-3;
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, s.str(), "double (all rows)", o);
  }
}

MmaTiling wgmma_tiling(Type type, const Shape &s, bool padded) {
  MmaTiling t = default_mma_tiling(mma_kind_for(type, true), s.M, s.N, s.K, gpu::Device::get().sm_count());
  if (padded)
    t.tma_padded_copies = true;
  return t;
}

} // namespace

void check_fp8() {
  std::printf("\n== the 8-bit floats (e4m3, e5m2) ==\n");
  for (Type type : {Float8E4M3(), Float8E5M2()}) {
    check_widening(type);
    check_narrowing(type);
    check_linear(type, "ffma", std::nullopt, {{67, 45, 37}, {67, 45, 1}, {67, 45, 3}});
    if (!target_for_current_device().has_warpgroup_mma())
      continue;
    // Rows the TMA reads (K % 16 == 0), partial tiles; the default tiling
    // of 1024^3 and of 1000 x 1048 x 1024.
    for (const Shape &s : std::vector<Shape>{{131, 136, 272}, {67, 64, 16}, {1000, 1048, 1024}, {1024, 1024, 1024}})
      check_linear(type, "wgmma+tma", wgmma_tiling(type, s, false), {s});
    // Any K through padded copies, the K = 1 / K = 3 pair.
    for (const Shape &s : std::vector<Shape>{{131, 133, 67}, {67, 45, 1}, {67, 45, 3}, {1000, 1000, 1000}})
      check_linear(type, "wgmma+tma+padded", wgmma_tiling(type, s, true), {s});
  }
}

void fp8_sanitizer_case() {
  if (!target_for_current_device().has_warpgroup_mma())
    return;
  const Shape ragged{131, 133, 67}, tma{131, 136, 272};
  check_linear(Float8E4M3(), "wgmma+tma", wgmma_tiling(Float8E4M3(), tma, false), {tma});
  check_linear(Float8E4M3(), "wgmma+tma+padded", wgmma_tiling(Float8E4M3(), ragged, true), {ragged});
}

} // namespace coalesce::gpu_check
