#include "bench/gpu_check/Fp8Check.h"

#include "bench/gpu_check/Report.h"
#include "dsl/Error.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Fp8Linear.h"
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

// `tiling` null: the FFMA schedule with `ffma_copies`.
void check_linear(Type type, const std::string &form, std::optional<MmaTiling> tiling, const std::vector<Shape> &shapes,
                  const TileCopies &ffma_copies = OneBuffer{}) {
  const std::string name = str_cat("fp8 ", form, " ", type, " (scales, bias_gelu, bf16 out)");
  std::optional<examples::Fp8Linear> g;
  std::optional<Pipeline> pipeline;
  std::string failure;
  try {
    g.emplace(type, type);
    if (tiling)
      g->schedule_mma(*tiling);
    else
      g->schedule_ffma(ffma_copies);
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
        o.error = examples::fp8_linear_error(type, type, s.M, s.N, s.K, [&](const Arguments &args, Buffer &out) {
          pipeline->realize_on_gpu(args, out);
        });
        o.not_finite = std::isfinite(o.error) ? 0 : 1; // an element not finite (or unwritten)
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
  // FP8's B is stored N x K (the warpgroup MMA reads 8-bit operands K-major).
  MmaTiling t = default_mma_tiling(mma_kind_for(type, true), s.M, s.N, s.K, gpu::Device::get().sm_count(), false, true);
  if (padded)
    t.tma_padded_copies = PaddedCopies::Both;
  return t;
}

// The same with the sums staged in shared memory and the scales, bias and
// GELU applied in the copy-out (TileStores::SumsThroughShared), whatever
// the default stores.
MmaTiling sums_tiling(Type type, const Shape &s, bool padded) {
  MmaTiling t = wgmma_tiling(type, s, padded);
  t.tile_stores = TileStores::SumsThroughShared;
  return t;
}

} // namespace

void check_fp8() {
  std::printf("\n== the 8-bit floats (e4m3, e5m2) ==\n");
  for (Type type : {Float8E4M3(), Float8E5M2()}) {
    check_widening(type);
    check_narrowing(type);
    check_linear(type, "ffma", std::nullopt, {{67, 45, 37}, {67, 45, 1}, {67, 45, 3}});
    // A cp.async pipeline of 1-byte elements.
    check_linear(type, "ffma (cp.async)", std::nullopt, {{67, 45, 37}, {67, 48, 64}, {67, 45, 1}, {67, 45, 3}},
                 AsyncCopies{3, true});
    // Tiles staged through registers.
    check_linear(type, "ffma (registers)", std::nullopt, {{67, 45, 37}, {67, 48, 64}, {67, 45, 1}, {67, 45, 3}},
                 RegisterDoubleBuffer{true});
    if (!target_for_current_device().has_warpgroup_mma())
      continue;
    // Rows the TMA reads (K % 16 == 0), partial tiles; the default tiling
    // of 1024^3 and of 1000 x 1048 x 1024.
    for (const Shape &s : std::vector<Shape>{{131, 136, 272}, {67, 64, 16}, {1000, 1048, 1024}, {1024, 1024, 1024}})
      check_linear(type, "wgmma+tma", wgmma_tiling(type, s, false), {s});
    // Any K through padded copies, the K = 1 / K = 3 pair.
    for (const Shape &s : std::vector<Shape>{{131, 133, 67}, {67, 45, 1}, {67, 45, 3}, {1000, 1000, 1000}})
      check_linear(type, "wgmma+tma+padded", wgmma_tiling(type, s, true), {s});
    // The TMA's kernel at a K whose rows it cannot read (K % 16 != 0)
    // without padded copies: its in-kernel cp.async branch.
    for (const Shape &s : std::vector<Shape>{{131, 133, 67}, {67, 45, 3}}) {
      MmaTiling t = wgmma_tiling(type, {131, 136, 272}, false);
      t.tma_padded_copies = PaddedCopies::None;
      check_linear(type, "wgmma+tma, cp.async branch", t, {s});
    }
    // The sums staged (the epilogue in the copy-out): TMA rows, padded
    // copies for any K, the K = 1 / K = 3 pair, and a 1024^3 of whole tiles.
    for (const Shape &s : std::vector<Shape>{{131, 136, 272}, {1000, 1048, 1024}, {1024, 1024, 1024}})
      check_linear(type, "wgmma+tma, sums staged", sums_tiling(type, s, false), {s});
    for (const Shape &s : std::vector<Shape>{{131, 133, 67}, {67, 45, 1}, {67, 45, 3}})
      check_linear(type, "wgmma+tma+padded, sums staged", sums_tiling(type, s, true), {s});
    // Every thread's cp.async copies (16 one-byte elements per vector, or
    // one at a time).
    for (const Shape &s : std::vector<Shape>{{131, 133, 67}, {67, 45, 1}, {67, 45, 3}, {131, 136, 272}}) {
      MmaTiling t = wgmma_tiling(type, s, false);
      t.tma = false;
      t.tma_padded_copies = PaddedCopies::None;
      check_linear(type, "wgmma (cp.async)", t, {s});
    }
  }
}

void fp8_sanitizer_case() {
  if (!target_for_current_device().has_warpgroup_mma())
    return;
  const Shape ragged{131, 133, 67}, tma{131, 136, 272};
  check_linear(Float8E4M3(), "wgmma+tma", wgmma_tiling(Float8E4M3(), tma, false), {tma});
  check_linear(Float8E4M3(), "wgmma+tma+padded", wgmma_tiling(Float8E4M3(), ragged, true), {ragged});
  check_linear(Float8E4M3(), "wgmma+tma+padded, sums staged", sums_tiling(Float8E4M3(), ragged, true), {ragged});
  // Every thread's cp.async copies of one-byte elements (no TMA).
  MmaTiling copies = wgmma_tiling(Float8E4M3(), ragged, false);
  copies.tma = false;
  copies.tma_padded_copies = PaddedCopies::None;
  check_linear(Float8E4M3(), "wgmma (cp.async)", copies, {ragged});
}

} // namespace coalesce::gpu_check
