// Tensor-core (warp MMA) schedules on the CPU, which runs the same WarpMma
// statements the GPU runs: against the double reference at square and
// ragged shapes, with the K = 1 / K = 3 pair, and their legality rules.

#include "examples/Reference.h"
#include "scheduler/GemmMmaSchedule.h"
#include "ErrorCapture.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// f32 rounded to tf32 as the instruction rounds it (nearest, ties away).
float to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7F800000u) != 0x7F800000u)
    bits = (bits + 0x1000u) & 0xFFFFE000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = to_tf32(v);
}

Gemm tf32_gemm(Epilogue e, MmaTiling t) {
  Gemm g = make_gemm(e);
  t.kind = MmaKind::TF32_m16n8k8;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

Buffer run(Pipeline &p, const GemmData &data, int M, int N, int K, Epilogue e) {
  Buffer out({M, N});
  out.poison();
  p.realize_on_cpu(gemm_arguments(data, M, N, K, e), out);
  return out;
}

MmaTiling small_tiling() {
  MmaTiling t;
  t.block_m = 64;
  t.block_n = 64;
  t.warp_m = 32;
  t.warp_n = 32;
  t.k_step = 16;
  return t;
}

} // namespace

TEST_CASE("a tf32 MMA GEMM + bias + GELU matches the double reference on tf32 data, ragged shapes included") {
  Gemm g = tf32_gemm(Epilogue::BiasGelu, small_tiling());
  Pipeline pipeline(g.out);
  for (auto [M, N, K] : {std::array<int, 3>{1, 1, 1}, {64, 64, 16}, {127, 129, 131}, {96, 200, 40}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    GemmData data = make_data(M, N, K, 7);
    round_to_tf32(data.a);
    round_to_tf32(data.b);
    Buffer out = run(pipeline, data, M, N, K, Epilogue::BiasGelu);
    CHECK(count_nan(out) == 0);
    CHECK(relative_error(out, reference(data, M, N, K, Epilogue::BiasGelu)) < 1e-5);
  }
}

TEST_CASE("a tf32 MMA rounds its f32 inputs to tf32 on the CPU as on the GPU") {
  Gemm g = tf32_gemm(Epilogue::None, small_tiling());
  Pipeline pipeline(g.out);
  GemmData data = make_data(64, 64, 64, 3);
  GemmData rounded = data;
  round_to_tf32(rounded.a);
  round_to_tf32(rounded.b);
  Buffer out = run(pipeline, data, 64, 64, 64, Epilogue::None);
  // Against the product of the rounded inputs it is exact up to f32 sums;
  // against the unrounded inputs it is off by tf32's 2^-11 rounding.
  CHECK(relative_error(out, reference(rounded, 64, 64, 64, Epilogue::None)) < 1e-6);
  double unrounded = relative_error(out, reference(data, 64, 64, 64, Epilogue::None));
  CHECK(unrounded > 1e-5);
  CHECK(unrounded < 2e-3);
}

TEST_CASE("an MMA schedule's fused epilogue runs once, after the whole reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::Bias, Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = tf32_gemm(e, small_tiling());
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      GemmData data = make_data(70, 66, K, 11);
      round_to_tf32(data.a);
      round_to_tf32(data.b);
      Buffer out = run(pipeline, data, 70, 66, K, e);
      CHECK(relative_error(out, unfused_chain(data, 70, 66, K, e)) < 1e-6);
    }
  }
}
