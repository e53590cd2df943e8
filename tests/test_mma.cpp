// Tensor-core (warp MMA) schedules on the CPU, which runs the same WarpMma
// statements the GPU runs: against the double reference at square and
// ragged shapes, with the K = 1 / K = 3 pair, and their legality rules.

#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "TextCount.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"

#include <array>
#include <doctest/doctest.h>


using namespace coalesce;
using namespace coalesce::examples;

namespace {

void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
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

TEST_CASE("pipelines of 3 and 4 stages compute what double buffering computes, ragged K included") {
  for (int stages : {3, 4}) {
    for (MmaKind kind : {MmaKind::TF32_m16n8k8, MmaKind::BF16_m16n8k16}) {
      bool tf32 = kind == MmaKind::TF32_m16n8k8;
      Gemm g = make_gemm(Epilogue::BiasGelu, tf32 ? Float(32) : BFloat(16), Float(32));
      MmaTiling t = small_tiling();
      t.kind = kind;
      t.stages = stages;
      schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
      Pipeline pipeline(g.out);
      for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {70, 66, 3}, {127, 129, 131}, {64, 64, 96}}) {
        CAPTURE(stages);
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        GemmData data = make_data(M, N, K, 13, tf32 ? Float(32) : BFloat(16));
        if (tf32) {
          round_to_tf32(data.a);
          round_to_tf32(data.b);
        }
        Buffer out = run(pipeline, data, M, N, K, Epilogue::BiasGelu);
        CHECK(count_nan(out) == 0);
        CHECK(relative_error(out, reference(data, M, N, K, Epilogue::BiasGelu)) < 1e-5);
      }
    }
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

TEST_CASE("bf16 and f16 MMA GEMMs + bias + GELU (bf16 out) match the double reference, ragged shapes and K = 1 / 3") {
  for (MmaKind kind : {MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16}) {
    Type in = kind == MmaKind::BF16_m16n8k16 ? BFloat(16) : Float(16);
    Gemm g = make_gemm(Epilogue::BiasGelu, in, BFloat(16));
    MmaTiling t = small_tiling();
    t.kind = kind;
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {127, 129, 131}, {70, 66, 1}, {70, 66, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      GemmData data = make_data(M, N, K, 5, in);
      // The sum is exact up to f32 rounding; the output is rounded to bf16
      // (half an ulp: 2^-9 relative).
      CHECK(coalesce::testing::cpu_error_against_reference(pipeline, data, M, N, K, Epilogue::BiasGelu,
                                                          BFloat(16)) < 4e-3);
    }
  }
}

TEST_CASE("an MMA schedule that breaks a tensor-core rule is rejected with the rule") {
  using coalesce::testing::user_error_of;
  SUBCASE("without allow_reassociation") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
        .mma_tile(ii, jj, MmaKind::TF32_m16n8k8, 32, 32, warp, lane, mi, nj, fi, fj);
    g.out.fuse_epilogue(g.acc, bj);
    OneBuffer zero{true};
    RVar ko("ko"), kk("kk");
    g.acc.update().mma(g.k, ko, kk, 16).stage_in_shared(g.A, ko, {}, zero).stage_in_shared(g.B, ko, {}, zero);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "allow_reassociation");
  }
  SUBCASE("operands not zero-filled at a ragged K") {
    Gemm g = make_gemm(Epilogue::None);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
        .mma_tile(ii, jj, MmaKind::TF32_m16n8k8, 32, 32, warp, lane, mi, nj, fi, fj);
    g.out.fuse_epilogue(g.acc, bj);
    RVar ko("ko"), kk("kk");
    g.acc.update().mma(g.k, ko, kk, 16).allow_reassociation().stage_in_shared(g.A, ko).stage_in_shared(g.B, ko);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }),
              "stage 'A' in shared memory with zero_fill copies (or the TMA's), so they read as 0");
  }
  SUBCASE("bf16 instruction on f32 inputs") {
    Gemm g = make_gemm(Epilogue::None);
    MmaTiling t = small_tiling();
    t.kind = MmaKind::BF16_m16n8k16;
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "multiplies bf16 values");
  }
  SUBCASE("a warp tile that does not divide the block tile") {
    Gemm g = make_gemm(Epilogue::None);
    MmaTiling t = small_tiling();
    t.warp_m = 48;
    CHECK_HAS(user_error_of([&] { schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t); }), "warp tile");
  }
  SUBCASE("the instruction's loops reordered after mma()") {
    Gemm g = make_gemm(Epilogue::None);
    MmaTiling t = small_tiling();
    t.kind = MmaKind::TF32_m16n8k8;
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    g.acc.update().reorder({RVar("kk_in"), Var("fj")});
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "innermost");
  }
}

TEST_CASE("MMA GEMM kernels assemble with ptxas for sm_90a and sm_80, with mma.sync and no spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  for (MmaKind kind : {MmaKind::TF32_m16n8k8, MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16}) {
    Type in = kind == MmaKind::BF16_m16n8k16 ? BFloat(16) : kind == MmaKind::F16_m16n8k16 ? Float(16) : Float(32);
    Gemm g = make_gemm(Epilogue::BiasGelu, in, in == Float(32) ? Float(32) : BFloat(16));
    MmaTiling t = default_mma_tiling(kind, 4096, 4096, GpuTarget().sm_count());
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline pipeline(g.out);
    for (std::string sm : {"sm_90a", "sm_80"}) {
      INFO(t.str(), " for ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      CHECK(ptx.find("mma.sync.aligned") != std::string::npos);
      PtxasResult assembled = pipeline.assemble(target);
      REQUIRE(assembled.kernels.size() == 1);
      const KernelResources &kernel = assembled.kernels.front();
      MESSAGE(t.str(), " ", sm, ": ", kernel.registers, " registers, ", kernel.shared_bytes, " B shared, ",
              "schedule to PTX in ", pipeline.last_ptx_compile_ms(), " ms");
      CHECK_FALSE(kernel.spills());
      CHECK(kernel.stack_frame_bytes == 0);
    }
  }
}

TEST_CASE("a reduction on tensor cores keeps its partial last k step in its one loop; the FFMA path peels it") {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k,
                    default_mma_tiling(MmaKind::BF16_m16n8k16, 4096, 4096, GpuTarget().sm_count()));
  // The copies fill what lies past K with 0: every k step, the partial
  // last one too, is the same instructions, in one loop.
  const std::string warp = Pipeline(g.out).loop_nest();
  CHECK(coalesce::testing::occurrences(warp, "for ko in serial") == 1);
  CHECK(coalesce::testing::occurrences(warp, "for ko in serial(0, ceil(K/32)):") == 1);
  // The FFMA path guards each k of its last step instead, in a loop of
  // its own after the full steps (in the loop, the guards cost a ragged K
  // 21% on an H100).
  Gemm f = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(f.out, f.acc, f.A, f.B, f.i, f.j, f.k, default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
  const std::string ffma = Pipeline(f.out).loop_nest();
  CHECK(coalesce::testing::occurrences(ffma, "for ko in serial(0, K/8):") == 1);
  CHECK(coalesce::testing::occurrences(ffma, "for ko in serial(K/8, ceil(K/8) - K/8):") == 1);
}
