// bf16 and f16 end to end: the conversions (every 16-bit value, ties, NaN,
// infinities, f16 subnormals), the host JIT's inline conversions against the
// runtime's, the arithmetic rule (16-bit operands widen to f32), GEMMs with
// 16-bit inputs and outputs on the CPU against the double reference, PTX
// that ptxas accepts, and the user errors for mismatched element types.
// The ahead-of-time tool's --dtype/--out-dtype are tested in test_aot.cpp,
// next to the helpers that run the tool.

#include "scheduler/LoweredFunc.h"
#include "ErrorCapture.h"
#include "FloatConversions.h"
#include "dsl/NarrowFloat.h"
#include "examples/Reference.h"
#include "examples/Schedules.h"
#include "dsl/recipes/GemmSchedule.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace coalesce;
using namespace coalesce::examples;
using coalesce::testing::user_error_of;

/// The multiprocessors the default target's GPU has (the tilings fill them).
const int kTargetSms = GpuTarget().sm_count();

using coalesce::testing::bits_of;
using coalesce::testing::convert_on_cpu;
using coalesce::testing::float_of;

namespace {

uint16_t narrow(Type type, float value) {
  return type == BFloat(16) ? float_to_bf16_bits(value) : float_to_f16_bits(value);
}

float widen(Type type, uint16_t bits) {
  return type == BFloat(16) ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}

// f32 values that exercise rounding: the edge cases, then random bit
// patterns (NaNs, infinities and subnormals included).
std::vector<float> rounding_probes() {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e10f, -1e10f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                               0x1p-24f, 0x1p-25f, 0x1.8p-24f, 0x1p-14f, 0x1.ffcp-15f, float_of(0x3F808000u),
                               float_of(0x3F818000u), float_of(0x7F800001u), float_of(0xFFC00001u)};
  std::mt19937 engine(2024);
  for (int n = 0; n < 20000; ++n)
    values.push_back(float_of(engine()));
  // Every f16 and bf16 value and the midpoints next to them.
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    values.push_back(f16_bits_to_float(static_cast<uint16_t>(h)));
    values.push_back(float_of(bits_of(bf16_bits_to_float(static_cast<uint16_t>(h))) | 0x8000u));
    values.push_back(float_of(bits_of(f16_bits_to_float(static_cast<uint16_t>(h))) + 0x1000u));
  }
  return values;
}

} // namespace

// ------------------------------------------------------------- conversions

TEST_CASE("Type: Float(16) is IEEE half, BFloat(16) is bfloat16, both 2 bytes") {
  CHECK(Float(16).str() == "f16");
  CHECK(BFloat(16).str() == "bf16");
  CHECK(Float(16).bytes() == 2);
  CHECK(BFloat(16).bytes() == 2);
  CHECK(Float(16).is_float());
  CHECK(BFloat(16).is_float());
  CHECK(Float(16).is_narrow_float());
  CHECK(BFloat(16).is_narrow_float());
  CHECK_FALSE(Float(32).is_narrow_float());
  CHECK(Float(16) != BFloat(16));
}

TEST_CASE("bf16: every value widens exactly and narrows back to itself") {
  int wrong = 0, nans = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float value = bf16_bits_to_float(static_cast<uint16_t>(b));
    wrong += bits_of(value) == b << 16 ? 0 : 1;
    if (std::isnan(value)) {
      ++nans;
      wrong += std::isnan(bf16_bits_to_float(float_to_bf16_bits(value))) ? 0 : 1;
    } else {
      wrong += float_to_bf16_bits(value) == b ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
  CHECK(nans == 2 * 127); // 2 signs x (2^7 - 1) non-zero mantissas
}

TEST_CASE("bf16: narrowing rounds to nearest, ties to even; NaN stays NaN; overflow is infinity") {
  CHECK(float_to_bf16_bits(float_of(0x3F808000u)) == 0x3F80); // 1 + 2^-8: a tie, down to even
  CHECK(float_to_bf16_bits(float_of(0x3F818000u)) == 0x3F82); // 1 + 3 * 2^-8: a tie, up to even
  CHECK(float_to_bf16_bits(float_of(0x3F808001u)) == 0x3F81); // just above the tie
  CHECK(float_to_bf16_bits(float_of(0x3F807FFFu)) == 0x3F80); // just below
  CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
  CHECK(float_to_bf16_bits(float_of(0x00008000u)) == 0x0000); // an f32 subnormal tie
  CHECK(float_to_bf16_bits(float_of(0x00018000u)) == 0x0002);
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(float_to_bf16_bits(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80); // past the largest bf16
  CHECK(float_to_bf16_bits(float_of(0x7F7F7FFFu)) == 0x7F7F);              // the largest bf16
  // A NaN whose payload lies only in the dropped bits must not become an
  // infinity: it comes back quiet, with its sign.
  CHECK(float_to_bf16_bits(float_of(0x7F800001u)) == 0x7FC0);
  CHECK(float_to_bf16_bits(float_of(0xFF800001u)) == 0xFFC0);
  CHECK(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()) == 0x7FC0);
}

TEST_CASE("f16: every value widens exactly and narrows back to itself") {
  int wrong = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float value = f16_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(value))
      wrong += std::isnan(f16_bits_to_float(float_to_f16_bits(value))) ? 0 : 1;
    else
      wrong += float_to_f16_bits(value) == h ? 0 : 1;
  }
  CHECK(wrong == 0);
  CHECK(f16_bits_to_float(0x0001) == 0x1p-24f); // the smallest subnormal
  CHECK(f16_bits_to_float(0x03FF) == 1023 * 0x1p-24f); // the largest subnormal
  CHECK(f16_bits_to_float(0x0400) == 0x1p-14f); // the smallest normal
  CHECK(f16_bits_to_float(0x7BFF) == 65504.0f);
  CHECK(f16_bits_to_float(0x3C00) == 1.0f);
  CHECK(f16_bits_to_float(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(f16_bits_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::signbit(f16_bits_to_float(0x8000)));
  CHECK(std::isnan(f16_bits_to_float(0x7E00)));
}

TEST_CASE("f16: narrowing rounds to nearest even, into subnormals and up to infinity") {
  CHECK(float_to_f16_bits(1.0f + 0x1p-11f) == 0x3C00);     // a tie, down to even
  CHECK(float_to_f16_bits(1.0f + 3 * 0x1p-11f) == 0x3C02); // a tie, up to even
  CHECK(float_to_f16_bits(65504.0f) == 0x7BFF);
  CHECK(float_to_f16_bits(65519.0f) == 0x7BFF);
  CHECK(float_to_f16_bits(65520.0f) == 0x7C00); // the tie past the largest rounds to infinity
  CHECK(float_to_f16_bits(1e10f) == 0x7C00);
  CHECK(float_to_f16_bits(-1e10f) == 0xFC00);
  CHECK(float_to_f16_bits(0x1p-24f) == 0x0001);
  CHECK(float_to_f16_bits(0x1p-25f) == 0x0000);                  // tie between 0 and 2^-24: to even
  CHECK(float_to_f16_bits(float_of(bits_of(0x1p-25f) + 1)) == 0x0001); // just above it
  CHECK(float_to_f16_bits(0x1.8p-24f) == 0x0002);                // tie between 1 and 2 units: to 2
  CHECK(float_to_f16_bits(2.5f * 0x1p-24f) == 0x0002);           // tie between 2 and 3: to 2
  CHECK(float_to_f16_bits(0x1.ffcp-15f) == 0x0400); // rounds up out of the subnormals
  CHECK(float_to_f16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_f16_bits(-1e-10f) == 0x8000);
  CHECK(float_to_f16_bits(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(float_to_f16_bits(float_of(0x7F800001u)) == 0x7E00); // NaN: quiet NaN, never infinity
  CHECK(float_to_f16_bits(float_of(0xFFC00000u)) == 0xFE00);
}

#if defined(__FLT16_MANT_DIG__)
TEST_CASE("f16: narrowing agrees with the compiler's _Float16 on every probe") {
  int wrong = 0;
  for (float value : rounding_probes()) {
    if (std::isnan(value))
      continue;
    _Float16 half = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &half, sizeof expected);
    if (float_to_f16_bits(value) != expected && ++wrong <= 5)
      MESSAGE("f32 bits ", bits_of(value), ": ours ", float_to_f16_bits(value), ", _Float16 ", expected);
  }
  CHECK(wrong == 0);
}
#endif

// -------------------------------------------------- the host JIT's conversions


TEST_CASE("the host JIT narrows f32 to bf16 and f16 bit for bit as the runtime does") {
  std::vector<float> probes = rounding_probes();
  Buffer input({static_cast<int>(probes.size())});
  for (size_t n = 0; n < probes.size(); ++n)
    input.set(n, probes[n]);
  for (Type to : {BFloat(16), Float(16)}) {
    INFO("to ", to);
    Buffer out = convert_on_cpu(input, to);
    const auto *bits = static_cast<const uint16_t *>(out.raw_data());
    int wrong = 0;
    for (size_t n = 0; n < probes.size(); ++n)
      if (bits[n] != narrow(to, probes[n]) && ++wrong <= 5)
        MESSAGE("f32 bits ", bits_of(probes[n]), ": JIT ", bits[n], ", runtime ", narrow(to, probes[n]));
    CHECK(wrong == 0);
  }
}

TEST_CASE("the host JIT widens every bf16 and f16 value to f32 bit for bit as the runtime does") {
  for (Type from : {BFloat(16), Float(16)}) {
    INFO("from ", from);
    Buffer input({0x10000}, from);
    auto *bits = static_cast<uint16_t *>(input.raw_data());
    for (uint32_t b = 0; b < 0x10000; ++b)
      bits[b] = static_cast<uint16_t>(b);
    Buffer out = convert_on_cpu(input, Float(32));
    int wrong = 0;
    for (uint32_t b = 0; b < 0x10000; ++b)
      wrong += bits_of(out.get(b)) == bits_of(widen(from, static_cast<uint16_t>(b))) ? 0 : 1;
    CHECK(wrong == 0);
  }
}

TEST_CASE("casts between bf16, f16 and i32 go through f32 and round once") {
  Buffer input({4}, Float(16));
  const float values[] = {1.0f + 0x1p-10f, -3.5f, 65504.0f, 0x1p-24f};
  for (int n = 0; n < 4; ++n)
    input.set(n, values[n]);
  Buffer out = convert_on_cpu(input, BFloat(16));
  for (int n = 0; n < 4; ++n)
    CHECK(out.get(n) == bf16_bits_to_float(float_to_bf16_bits(values[n])));
  Input h("h", Float(16), {4});
  Var i("i");
  CHECK(to_string(cast(BFloat(16), h(i))).find("f32(") != std::string::npos);
  CHECK(to_string(cast(Float(16), cast(Int(32), i))).find("f32(") != std::string::npos);
}

// ------------------------------------------------------- the arithmetic rule

TEST_CASE("arithmetic on bf16/f16 values is f32; only an explicit cast narrows") {
  Input A("A", BFloat(16), {4, 4}), B("B", Float(16), {4, 4}), bias("bias", Float(32), {4});
  Var i("i"), j("j");
  Expr product = A(i, j) * A(j, i);
  CHECK(product.type() == Float(32));
  CHECK(to_string(product).find("f32(A(") != std::string::npos);
  CHECK((A(i, j) + B(i, j)).type() == Float(32));
  CHECK((A(i, j) + 1).type() == Float(32));
  CHECK((A(i, j) + bias(j)).type() == Float(32));
  CHECK((-A(i, j)).type() == Float(32));
  CHECK((A(i, j) < B(i, j)).type() == Bool());
  CHECK(min(A(i, j), 0.5f).type() == Float(32));
  CHECK(gelu(A(i, j)).type() == Float(32));
  CHECK(relu(B(i, j)).type() == Float(32));
  CHECK(gelu_tanh(A(i, j)).type() == Float(32));
  CHECK(exp(A(i, j)).type() == Float(32));
  CHECK(cast(BFloat(16), gelu(A(i, j))).type() == BFloat(16));
  CHECK(A(i, j).type() == BFloat(16)); // a plain read keeps its type (a copy stays 16-bit)

  Func acc("acc"), out("out");
  RDom k(0, 4, "k");
  acc(i, j) = 0.0f;
  CHECK_NOTHROW(acc(i, j) += A(i, k) * A(k, j));
  out(i, j) = cast(BFloat(16), acc(i, j));
  CHECK(Expr(out(i, j)).type() == BFloat(16));
}

TEST_CASE("a cast to a float type Coalesce lacks is a user error") {
  Var i("i");
  CHECK_HAS(user_error_of([&] { cast(Float(64), cast(Float(32), i)); }), "cast to f64");
  CHECK_HAS(user_error_of([&] { cast(BFloat(8), cast(Float(32), i)); }),
            "Float(16) (IEEE half), BFloat(16), Float8E4M3() and Float8E5M2()");
  CHECK_HAS(user_error_of([&] { cast(Float(8), cast(Float(32), i)); }), "cast to f8");
  CHECK_HAS(user_error_of([] { Input("X", Float(64), {4}); }), "Input 'X' has element type f64");
}

// ------------------------------------------------------------------- buffers

TEST_CASE("a bf16/f16 Buffer stores 2-byte values, rounds on set and widens exactly on get") {
  Buffer b({3, 5}, BFloat(16));
  CHECK(b.type() == BFloat(16));
  CHECK(b.size() == 15);
  CHECK(b.size_in_bytes() == 30);
  CHECK(b.at(2, 4) == 0.0f);
  b.set(1, 2, 1.0f + 0x1p-8f); // a tie: to even, 1
  CHECK(b.at(1, 2) == 1.0f);
  b.set(1, 3, 1.0f + 3 * 0x1p-8f);
  CHECK(b.at(1, 3) == 1.0f + 0x1p-6f);
  CHECK(static_cast<const uint16_t *>(b.raw_data())[1 * 5 + 3] == 0x3F82);
  const Buffer &read = b;
  CHECK(read(1, 3) == 1.0f + 0x1p-6f);

  Buffer f32({4});
  CHECK(f32.type() == Float(32));
  CHECK(f32.size_in_bytes() == 16);
  CHECK(f32.raw_data() == f32.data());

  for (Type type : {BFloat(16), Float(16), Float(32)}) {
    INFO(type);
    Buffer r({64, 64}, type);
    r.fill_random(9);
    for (size_t n = 0; n < r.size(); ++n) {
      float v = r.get(n);
      REQUIRE(v >= -1.0f);
      REQUIRE(v <= 1.0f);
      if (type != Float(32))
        REQUIRE(widen(type, narrow(type, v)) == v); // representable exactly
    }
    r.poison();
    CHECK(count_nan(r) == r.size());
  }
  Buffer f32_random({8});
  f32_random.fill_random(3);
  std::mt19937 engine(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  CHECK(f32_random.get(0) == uniform(engine)); // the f32 sequence is unchanged
}

TEST_CASE("Buffer: a type it cannot hold, and f32 access to 16-bit storage, are user errors") {
  CHECK_HAS(user_error_of([] { Buffer({2, 2}, Int(32)); }),
            "Buffer element type i32 is not supported; a Buffer holds Float(32), BFloat(16), Float(16), Float8E4M3() "
            "or Float8E5M2()");
  Buffer b({2, 2}, Float(16));
  CHECK_HAS(user_error_of([&] { b.values(); }),
            "Buffer::values() gives f32 storage, but this buffer holds f16 elements; use get()/set()");
  CHECK_HAS(user_error_of([&] { b.data(); }), "Buffer::data()");
  CHECK_HAS(user_error_of([&] { b(1, 1) = 2.0f; }), "Buffer::operator()");
}

// --------------------------------------------------------- argument binding

TEST_CASE("a buffer whose element type differs from the declared one is a user error naming both") {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
  Pipeline pipeline(g.out);
  const int M = 4, N = 5, K = 6;
  GemmData typed = make_data(M, N, K, 1, BFloat(16));
  GemmData f32 = make_data(M, N, K, 1);
  Buffer out_bf16({M, N}, BFloat(16)), out_f32({M, N}), out_f16({M, N}, Float(16));

  std::string wrong_input = user_error_of(
      [&] { pipeline.realize_on_cpu(gemm_arguments({f32.a, typed.b, typed.bias}, M, N, K, g.epilogue), out_bf16); });
  CHECK_HAS(wrong_input, "input buffer 'A' holds f32 elements but the pipeline declares 'A' as bf16");
  CHECK_HAS(wrong_input, "Buffer(shape, BFloat(16))");

  std::string wrong_bias = user_error_of([&] {
    pipeline.realize_on_cpu(gemm_arguments({typed.a, typed.b, Buffer({N}, BFloat(16))}, M, N, K, g.epilogue),
                            out_bf16);
  });
  CHECK_HAS(wrong_bias, "input buffer 'bias' holds bf16 elements but the pipeline declares 'bias' as f32");

  CHECK_HAS(user_error_of([&] { pipeline.realize_on_cpu(gemm_arguments(typed, M, N, K, g.epilogue), out_f32); }),
            "output buffer 'out' holds f32 elements but the pipeline declares 'out' as bf16 (the type of the "
            "output Func's definition)");
  CHECK_HAS(user_error_of([&] { pipeline.realize_on_cpu(gemm_arguments(typed, M, N, K, g.epilogue), out_f16); }),
            "output buffer 'out' holds f16 elements but the pipeline declares 'out' as bf16");
  CHECK_NOTHROW(pipeline.realize_on_cpu(gemm_arguments(typed, M, N, K, g.epilogue), out_bf16));

  // The f32 pipeline refuses 16-bit buffers the same way.
  Pipeline f32_pipeline(make_gemm(Epilogue::None).out);
  CHECK_HAS(user_error_of([&] {
              f32_pipeline.realize_on_cpu(gemm_arguments(typed, M, N, K, Epilogue::None), out_f32);
            }),
            "input buffer 'A' holds bf16 elements but the pipeline declares 'A' as f32");
}

// ------------------------------------------------------------ GEMMs on the CPU

namespace {

// The output's own rounding dominates the error: half an ulp is 2^-9 of the
// value for bf16 (8 significant bits) and 2^-11 for f16 (11); the f32 sums
// add under 1e-5 (test_numerics). Twice the rounding bound leaves margin
// for that and nothing more.
double tolerance_for(Type out) {
  if (out == BFloat(16))
    return 0x1p-8; // ~3.9e-3
  if (out == Float(16))
    return 0x1p-10; // ~9.8e-4
  return 1e-5;
}

struct TypedShape {
  int M, N, K;
};

struct TypedSchedule {
  const char *name;
  std::function<void(Gemm &)> apply;
};

std::vector<TypedSchedule> typed_schedules() {
  GemmTiling through_registers = default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count());
  through_registers.async_copy = false;
  return {
      {"unscheduled", [](Gemm &) {}},
      {"shared_staged", [](Gemm &g) { schedule_shared_staged(g); }},
      {"bias_folded", schedule_bias_folded},
      {"default (async copies)",
       [](Gemm &g) { schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, kTargetSms)); }},
      {"default (through registers)",
       [through_registers](Gemm &g) { schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, through_registers); }},
  };
}

// The unfused f32 chain with its output rounded to `out`, as the fused
// kernel's output is.
Buffer rounded_chain(const GemmData &data, TypedShape s, Epilogue e, Type out) {
  Buffer chain = unfused_chain(data, s.M, s.N, s.K, e);
  Buffer rounded({s.M, s.N}, out);
  for (size_t n = 0; n < chain.size(); ++n)
    rounded.set(n, chain.get(n));
  return rounded;
}

} // namespace

TEST_CASE("bf16 and f16 GEMM + bias + GELU with a 16-bit output match the double reference on the CPU") {
  const Epilogue e = Epilogue::BiasGelu;
  struct Types {
    Type in, out;
  };
  const Types pairs[] = {{BFloat(16), BFloat(16)}, {Float(16), BFloat(16)}, {Float(16), Float(16)},
                         {BFloat(16), Float(32)}};
  const TypedShape shapes[] = {{1, 1, 1}, {127, 129, 131}};
  for (const TypedSchedule &schedule : typed_schedules())
    for (const Types &types : pairs) {
      // Every schedule with the brief's two pairs; the others with one schedule.
      bool main_pair = types.out == BFloat(16);
      if (!main_pair && std::string(schedule.name) != "default (async copies)")
        continue;
      INFO("schedule '", schedule.name, "', A and B ", types.in, ", out ", types.out);
      Gemm g = make_gemm(e, types.in, types.out);
      schedule.apply(g);
      Pipeline pipeline(g.out);
      const double tolerance = tolerance_for(types.out);
      auto run = [&](const GemmData &data, TypedShape s) {
        Buffer out({s.M, s.N}, types.out);
        out.poison();
        pipeline.realize_on_cpu(gemm_arguments(data, s.M, s.N, s.K, e), out);
        return out;
      };
      for (TypedShape s : shapes) {
        INFO("shape ", s.M, "x", s.N, "x", s.K);
        GemmData data = make_data(s.M, s.N, s.K, 21, types.in);
        Buffer out = run(data, s);
        CHECK(count_nan(out) == 0);
        double error = relative_error(out, reference(data, s.M, s.N, s.K, e));
        CHECK(error < tolerance);
      }
      // The K = 1 / K = 3 pair: at both, the fused result agrees with the
      // unfused chain (rounded to the output type); an epilogue applied
      // inside the reduction would agree at K = 1 only.
      for (int K : {1, 3}) {
        TypedShape s{67, 45, K};
        INFO("K = ", K);
        GemmData data = make_data(s.M, s.N, K, 5, types.in);
        Buffer out = run(data, s);
        CHECK(relative_error(out, rounded_chain(data, s, e, types.out)) < tolerance);
        CHECK(relative_error(out, reference(data, s.M, s.N, K, e)) < tolerance);
      }
    }
}

TEST_CASE("the K = 3 check still tells a misplaced epilogue at the 16-bit tolerance") {
  // What a wrong fusion computes (the epilogue after every step), rounded to
  // bf16: it must miss the chain by more than the tolerance.
  TypedShape s{67, 45, 3};
  GemmData data = make_data(s.M, s.N, s.K, 5, BFloat(16));
  Buffer misplaced({s.M, s.N}, BFloat(16));
  for (int i = 0; i < s.M; ++i)
    for (int j = 0; j < s.N; ++j) {
      float partial = 0.0f;
      for (int k = 0; k < s.K; ++k)
        partial = reference_epilogue<float>(Epilogue::BiasGelu, partial + data.a.at(i, k) * data.b.at(k, j),
                                            data.bias.get(j));
      misplaced.set(i, j, partial);
    }
  CHECK(relative_error(misplaced, rounded_chain(data, s, Epilogue::BiasGelu, BFloat(16))) >
        4 * tolerance_for(BFloat(16)));
}

// --------------------------------------------------------------------- PTX

TEST_CASE("PTX for bf16 and f16 GEMM schedules assembles with ptxas for sm_80 and sm_90a, without spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found (looked under ", cuda_toolkit_path("bin/ptxas"), "): skipping");
    return;
  }
  struct Case {
    Type in, out;
    bool default_schedule;
  };
  const Case cases[] = {{BFloat(16), BFloat(16), true}, {Float(16), Float(16), true}, {BFloat(16), BFloat(16), false}};
  for (const Case &c : cases) {
    Gemm g = make_gemm(Epilogue::BiasGelu, c.in, c.out);
    if (c.default_schedule)
      schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, kTargetSms));
    else
      schedule_shared_staged(g);
    Pipeline pipeline(g.out);
    for (std::string sm : {"sm_80", "sm_90a"}) {
      INFO(c.in, " -> ", c.out, (c.default_schedule ? ", default schedule" : ", shared_staged"), ", ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      // The output is narrowed by the hardware conversion, round to nearest even.
      CHECK(ptx.find(c.out == BFloat(16) ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32") != std::string::npos);
      // The staged tiles hold 2-byte elements.
      CHECK(ptx.find("st.shared.b16") != std::string::npos);
      PtxasResult assembled = pipeline.assemble(target);
      CHECK_FALSE(assembled.cubin.empty());
      REQUIRE_FALSE(assembled.kernels.empty());
      for (const KernelResources &kernel : assembled.kernels) {
        INFO("ptxas log:\n", assembled.log);
        CHECK_FALSE(kernel.spills());
        CHECK(kernel.stack_frame_bytes == 0);
      }
    }
  }
}

TEST_CASE("16-bit inputs halve the staged tiles' shared memory") {
  auto shared_bytes = [](Type in) {
    Gemm g = make_gemm(Epilogue::BiasGelu, in, Float(32));
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
    Pipeline pipeline(g.out);
    return pipeline.gpu_program().kernels.at(0).shared_bytes;
  };
  CHECK(shared_bytes(BFloat(16)) * 2 == shared_bytes(Float(32)));
}
