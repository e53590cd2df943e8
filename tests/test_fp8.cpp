// The 8-bit floats (Float8E4M3(), Float8E5M2()) on the CPU: the runtime's
// conversions against a brute-force nearest-even search over every value
// of the format (saturating, NaN to 0x7F, as PTX's cvt.rn.satfinite), ties,
// every code widened and narrowed back, the host JIT's inline conversions
// bit for bit against the runtime's, Buffers of 1-byte elements, a GEMM with
// FP8 inputs, per-row and per-column scales, bias and GELU and a bf16 output
// against the double reference at a ragged shape and the K = 1 / K = 3 pair;
// on GPU targets, PTX's conversions (sm_89 and later; Ampere refused) and
// the 16-bit tensor-core instructions' refusal of FP8 operands
// (tests/test_wgmma_fp8.cpp runs the 8-bit warpgroup MMA).

#include "ErrorCapture.h"
#include "FloatConversions.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"
#include "examples/Fp8Linear.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace coalesce;
using coalesce::testing::bits_of;
using coalesce::testing::convert_on_cpu;
using coalesce::testing::float_of;
using coalesce::testing::user_error_of;

namespace {

struct Format {
  Type type;
  float (*widen)(uint8_t);
  uint8_t (*narrow)(float);
  float max_finite;
  uint8_t max_code;
};
const Format kFormats[] = {{Float8E4M3(), e4m3_bits_to_float, float_to_e4m3_bits, 448.0f, 0x7E},
                           {Float8E5M2(), e5m2_bits_to_float, float_to_e5m2_bits, 57344.0f, 0x7B}};

// The code a correct conversion gives, by search: NaN -> 0x7F; magnitudes at
// or past the largest finite value -> it; else the nearest finite value,
// the even code on a tie; the sign kept.
uint8_t nearest(const Format &f, float x) {
  if (std::isnan(x))
    return 0x7F;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude >= f.max_finite)
    return sign | f.max_code;
  int best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int code = 0; code < 0x80; ++code) {
    float value = f.widen(static_cast<uint8_t>(code));
    if (!std::isfinite(value))
      continue;
    double distance = std::fabs(value - magnitude);
    if (distance < best_distance || (distance == best_distance && code % 2 == 0)) {
      best_distance = distance;
      best = code;
    }
  }
  return static_cast<uint8_t>(sign | best);
}

// Every finite value of both formats, the midpoints between neighbours,
// the specials and random f32 bit patterns and magnitudes.
std::vector<float> probes() {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               448.0f,
                               449.0f,
                               464.0f,
                               480.0f,
                               57344.0f,
                               61440.0f,
                               1e30f,
                               -1e30f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::denorm_min(),
                               0x1p-10f,
                               0x1.8p-10f,
                               0x1p-17f,
                               0x1.8p-17f,
                               float_of(0xFFC00001u)};
  for (const Format &f : kFormats)
    for (int code = 0; code < 0x7F; ++code) {
      float value = f.widen(static_cast<uint8_t>(code)), next = f.widen(static_cast<uint8_t>(code + 1));
      values.push_back(value);
      values.push_back(-value);
      if (std::isfinite(next))
        values.push_back((value + next) / 2); // exact in f32: a tie
    }
  std::mt19937 engine(8);
  for (int n = 0; n < 20000; ++n) {
    values.push_back(float_of(engine()));
    values.push_back(
        std::ldexp(static_cast<float>(engine() % 100000) / 1000.0f - 50.0f, static_cast<int>(engine() % 40) - 25));
  }
  return values;
}

// The FP8 linear layer (examples/Fp8Linear.h) on its FFMA schedule.
examples::Fp8Linear ffma_layer(Type a, Type w) {
  examples::Fp8Linear g(a, w);
  g.schedule_ffma();
  return g;
}

double scaled_gemm_error(Type a_type, Type w_type, int M, int N, int K) {
  Pipeline pipeline(ffma_layer(a_type, w_type).out);
  return examples::fp8_linear_error(a_type, w_type, M, N, K,
                                    [&](const Arguments &args, Buffer &out) { pipeline.realize_on_cpu(args, out); });
}

} // namespace

TEST_CASE("Float8E4M3 and Float8E5M2 are 1-byte floats that arithmetic widens") {
  CHECK(Float8E4M3().str() == "e4m3");
  CHECK(Float8E5M2().str() == "e5m2");
  CHECK(Float8E4M3().bytes() == 1);
  CHECK(Float8E4M3().is_float());
  CHECK(Float8E5M2().is_narrow_float());
  CHECK(Float8E4M3() != Float8E5M2());
  CHECK_FALSE(Float(8).is_narrow_float());
  CHECK_FALSE(BFloat(8).is_narrow_float());
}

TEST_CASE("FP8: every code widens exactly and narrows back to itself; the formats' edges") {
  for (const Format &f : kFormats) {
    INFO(f.type);
    int wrong = 0;
    for (int code = 0; code < 0x100; ++code) {
      float value = f.widen(static_cast<uint8_t>(code));
      if (std::isnan(value))
        continue;
      if (std::isinf(value)) // e5m2's infinities saturate
        wrong += f.narrow(value) == ((code & 0x80) | f.max_code) ? 0 : 1;
      else
        wrong += f.narrow(value) == code ? 0 : 1;
    }
    CHECK(wrong == 0);
    CHECK(f.widen(f.max_code) == f.max_finite);
    CHECK(f.widen(0x80 | f.max_code) == -f.max_finite);
    CHECK(bits_of(f.widen(0x80)) == 0x80000000u); // -0
    CHECK(std::isnan(f.widen(0x7F)));
    CHECK(std::isnan(f.widen(0xFF)));
  }
  CHECK(e4m3_bits_to_float(0x01) == 0x1p-9f); // the smallest subnormal
  CHECK(e4m3_bits_to_float(0x08) == 0x1p-6f); // the smallest normal
  CHECK(e5m2_bits_to_float(0x01) == 0x1p-16f);
  CHECK(std::isinf(e5m2_bits_to_float(0x7C)));
}

TEST_CASE("FP8: narrowing is the nearest value, ties to even, saturating, as cvt.rn.satfinite") {
  std::vector<float> values = probes();
  for (const Format &f : kFormats) {
    INFO(f.type);
    int wrong = 0;
    for (float x : values)
      if (f.narrow(x) != nearest(f, x) && ++wrong <= 5)
        MESSAGE("f32 bits ", bits_of(x), ": ", int(f.narrow(x)), ", nearest ", int(nearest(f, x)));
    CHECK(wrong == 0);
    CHECK(f.narrow(std::numeric_limits<float>::infinity()) == f.max_code);
    CHECK(f.narrow(-std::numeric_limits<float>::infinity()) == (0x80 | f.max_code));
    CHECK(f.narrow(std::numeric_limits<float>::quiet_NaN()) == 0x7F);
    CHECK(f.narrow(-0.0f) == 0x80);
  }
  // Ties: 1 + 1/16 lies halfway between e4m3's 1 and 1.125 (to the even 1);
  // 1 + 3/16 between 1.125 and 1.25 (to the even 1.25).
  CHECK(e4m3_bits_to_float(float_to_e4m3_bits(1.0625f)) == 1.0f);
  CHECK(e4m3_bits_to_float(float_to_e4m3_bits(1.1875f)) == 1.25f);
  CHECK(float_to_e4m3_bits(464.0f) == 0x7E); // past 448: saturates, never the NaN pattern
}

TEST_CASE("the host JIT converts to and from FP8 bit for bit as the runtime does") {
  std::vector<float> values = probes();
  Buffer input({static_cast<int>(values.size())});
  for (size_t n = 0; n < values.size(); ++n)
    input.set(n, values[n]);
  for (const Format &f : kFormats) {
    INFO(f.type);
    Buffer narrowed = convert_on_cpu(input, f.type);
    const auto *bytes = static_cast<const uint8_t *>(narrowed.raw_data());
    int wrong = 0;
    for (size_t n = 0; n < values.size(); ++n)
      wrong += bytes[n] == f.narrow(values[n]) ? 0 : 1;
    CHECK(wrong == 0);

    Buffer codes({0x100}, f.type);
    auto *raw = static_cast<uint8_t *>(codes.raw_data());
    for (int code = 0; code < 0x100; ++code)
      raw[code] = static_cast<uint8_t>(code);
    Buffer widened = convert_on_cpu(codes, Float(32));
    wrong = 0;
    for (int code = 0; code < 0x100; ++code) {
      float expected = f.widen(static_cast<uint8_t>(code)), got = widened.get(code);
      wrong += (std::isnan(expected) ? std::isnan(got) : bits_of(got) == bits_of(expected)) ? 0 : 1;
    }
    CHECK(wrong == 0);
  }
  // FP8 to another narrow type goes through f32 once.
  Buffer e4m3({3}, Float8E4M3());
  e4m3.set(0, 1.125f);
  e4m3.set(1, -448.0f);
  e4m3.set(2, 0x1p-9f);
  Buffer bf16 = convert_on_cpu(e4m3, BFloat(16));
  CHECK(bf16.get(0) == 1.125f);
  CHECK(bf16.get(1) == -448.0f);
  CHECK(bf16.get(2) == 0x1p-9f);
}

TEST_CASE("an FP8 Buffer stores 1-byte values, rounds and saturates on set, widens exactly on get") {
  Buffer b({2, 3}, Float8E4M3());
  CHECK(b.size_in_bytes() == 6);
  b.set(0, 1.0f);
  b.set(1, 1000.0f);
  b.set(2, 0.3f);
  CHECK(static_cast<const uint8_t *>(b.raw_data())[0] == 0x38);
  CHECK(b.get(1) == 448.0f);
  CHECK(b.get(2) == e4m3_bits_to_float(float_to_e4m3_bits(0.3f)));
  CHECK_HAS(user_error_of([&] { b.values(); }), "holds e4m3 elements");
  Buffer random({64}, Float8E5M2());
  random.fill_random(4);
  int zeros = 0;
  for (int n = 0; n < 64; ++n) {
    CHECK(random.get(n) == e5m2_bits_to_float(float_to_e5m2_bits(random.get(n))));
    zeros += random.get(n) == 0.0f ? 1 : 0;
  }
  CHECK(zeros < 8);
}

TEST_CASE("a GEMM of FP8 inputs with per-row and per-column scales, bias and GELU matches the double reference") {
  // e4m3 x e4m3, e5m2 x e4m3; a ragged shape, K = 0 (gelu of the bias), and
  // K = 1 / K = 3 (an epilogue inside the reduction would scale and activate
  // partial sums).
  for (auto [a, b] : {std::pair{Float8E4M3(), Float8E4M3()}, std::pair{Float8E5M2(), Float8E4M3()}})
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{67, 45, 37}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      INFO(a, " x ", b);
      // The products and their f32 sums are exact or nearly; the bf16 output
      // rounds each element once (2^-9 relative).
      CHECK(scaled_gemm_error(a, b, M, N, K) < 4e-3);
    }
}

TEST_CASE("FP8 on a GPU target: the loads widen and the stores narrow with PTX's conversions, through ptxas") {
  // The FFMA GEMM above reads FP8 in its inner loop: e4m3 / e5m2 pairs to
  // f16 pairs, then f32.
  for (auto [a, b] : {std::pair{Float8E4M3(), Float8E4M3()}, std::pair{Float8E5M2(), Float8E4M3()}}) {
    INFO(a, " x ", b);
    examples::Fp8Linear g = ffma_layer(a, b);
    Pipeline pipeline(g.out);
    const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
    CHECK_HAS(ptx, str_cat("cvt.rn.f16x2.", a, "x2"));
    CHECK_HAS(ptx, "cvt.rn.f16x2.e4m3x2");
    if (ptxas_available())
      CHECK(pipeline.assemble(parse_gpu_target("sm_90a")).kernels.size() == 1);
    // Ampere has no such conversions.
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).ptx(parse_gpu_target("sm_86")); }),
              str_cat("converts ", a, " values to f32, which PTX does on sm_89 and later only; the target is sm_86"));
    CHECK(Pipeline(g.out).ptx(parse_gpu_target("sm_89")).find("cvt.rn.f16x2.e4m3x2") != std::string::npos);
  }
  // An FP8 output: f32 to e4m3 / e5m2, saturating, in the pair's low byte.
  for (Type type : {Float8E4M3(), Float8E5M2()}) {
    INFO(type);
    Param n("n");
    Input x("x", Float(32), {n});
    Var i("i"), bi("bi"), ti("ti");
    Func out("out");
    out(i) = cast(type, x(i) * 2.0f);
    out.split(i, bi, ti, 128).gpu_blocks({bi}).gpu_threads({ti});
    Pipeline pipeline(out);
    CHECK_HAS(pipeline.ptx(parse_gpu_target("sm_90a")), str_cat("cvt.rn.satfinite.", type, "x2.f32"));
  }
  // The tensor cores: the 16-bit instructions name the 8-bit one.
  for (MmaKind kind : {MmaKind::BF16_wgmma_m64k16, MmaKind::BF16_m16n8k16}) {
    INFO(mma_kind_name(kind));
    MmaTiling t = default_mma_tiling(kind, 4096, 4096, GpuTarget().sm_count());
    CHECK_HAS(user_error_of([&] {
                examples::Gemm g = testing::mma_scheduled(t, examples::Epilogue::BiasGelu, Float8E4M3(), BFloat(16));
                Pipeline(g.out).loop_nest();
              }),
              "choose the instruction for e4m3 (e4m3 wgmma, a warpgroup MMA)");
  }
}

TEST_CASE("FP8 inputs in a cp.async pipeline or through registers: right on the CPU and compiled for GPUs") {
  examples::Fp8Linear g(Float8E4M3(), Float8E4M3());
  g.schedule_ffma(AsyncCopies{3, true});
  Pipeline pipeline(g.out);
  // K = 64: whole 16-byte vectors of 1-byte elements; 37: element copies.
  for (int K : {37, 64, 1, 3}) {
    CAPTURE(K);
    CHECK(examples::fp8_linear_error(Float8E4M3(), Float8E4M3(), 67, 48, K, [&](const Arguments &args, Buffer &out) {
            pipeline.realize_on_cpu(args, out);
          }) < 4e-3);
  }
  // Run on the H200 by coalesce-gpu-check, so GPU targets compile it.
  CHECK_HAS(pipeline.ptx(parse_gpu_target("sm_90a")), "cp.async.");

  examples::Fp8Linear registers(Float8E4M3(), Float8E4M3());
  registers.schedule_ffma(RegisterDoubleBuffer{});
  Pipeline staged_by_registers(registers.out);
  CHECK(examples::fp8_linear_error(Float8E4M3(), Float8E4M3(), 67, 48, 37, [&](const Arguments &args, Buffer &out) {
          staged_by_registers.realize_on_cpu(args, out);
        }) < 4e-3);
  // Also run on the H200 by coalesce-gpu-check ("ffma (registers)").
  CHECK_HAS(staged_by_registers.ptx(parse_gpu_target("sm_90a")), "cvt.rn.f16x2.e4m3x2");
}
