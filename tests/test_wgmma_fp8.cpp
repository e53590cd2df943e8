// The 8-bit float warpgroup MMAs (wgmma m64nNk32 .e4m3 / .e5m2): an FP8
// linear layer, out = bf16(gelu(acc * a_scale(i) * w_scale(j) + bias(j)))
// with acc(i, j) += A(i, k) * W(j, k), both operands K-major as the
// instruction reads them (W as nn.Linear stores its weight). On the CPU,
// which runs the statements the GPU runs, against the double reference at
// ragged shapes with the TMA's copies and padded copies, K = 0 and the
// K = 1 / K = 3 pair; the legality rules; and the kernels through ptxas.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Fp8Linear.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

using namespace coalesce;
using coalesce::testing::user_error_of;

namespace {

// The layer (examples/Fp8Linear.h) on the warpgroup MMA with tiling `t`.
examples::Fp8Linear layer(Type a, Type w, const MmaTiling &t) {
  examples::Fp8Linear g(a, w);
  g.schedule_mma(t);
  return g;
}

MmaTiling one_tile(MmaKind kind, bool padded) {
  MmaTiling t = testing::one_tile_tma_tiling(kind);
  t.tma_padded_copies = (padded) ? PaddedCopies::Both : PaddedCopies::None;
  return t;
}

// ||ours - reference|| / ||reference|| on the CPU.
double linear_error(Type type, const MmaTiling &t, int M, int N, int K) {
  Pipeline pipeline(layer(type, type, t).out);
  return examples::fp8_linear_error(type, type, M, N, K,
                                    [&](const Arguments &args, Buffer &out) { pipeline.realize_on_cpu(args, out); });
}

constexpr std::array<MmaKind, 2> kKinds = {MmaKind::E4M3_wgmma_m64k32, MmaKind::E5M2_wgmma_m64k32};

} // namespace

TEST_CASE("the 8-bit warpgroup MMAs: k 32, both operands K-major, 128-element k steps") {
  for (MmaKind kind : kKinds) {
    const MmaInstruction &instruction = mma_instruction(kind);
    CAPTURE(instruction.name);
    CHECK(instruction.operand.is_fp8());
    CHECK(mma_k(kind) == 32);
    CHECK(is_warpgroup_mma(kind));
    CHECK(warpgroup_mma_reads_b_k_major(kind));
    CHECK(mma_kind_for(instruction.operand, true) == kind);
    // One 128-byte swizzled row per k step.
    CHECK(default_mma_tiling(kind, 4096, 4096, GpuTarget().sm_count()).k_step == 128);
  }
  // No warp-level MMA reads 8-bit floats on sm_90.
  CHECK_HAS(user_error_of([] { mma_kind_for(Float8E4M3(), false); }), "e4m3 and e5m2 only at the warpgroup level");
}

TEST_CASE("an FP8 linear layer on the warpgroup MMA matches the double reference, ragged, K = 0, 1, 3") {
  // TMA copies where the rows are 16-byte multiples (K % 16 == 0), padded
  // copies for any K; several blocks, partial tiles, k steps of 128. The
  // output stored as the tiling says, and with its sums staged (the scales,
  // bias and GELU in the copy-out).
  struct Case {
    int M, N, K;
    bool padded;
  };
  // Without padded copies a K whose rows the TMA cannot read takes the
  // kernel's cp.async branch (131 x 133 x 67 unpadded).
  const std::vector<Case> cases = {{131, 136, 272, false}, {67, 64, 16, false}, {131, 133, 67, true},
                                   {131, 133, 67, false},  {67, 45, 0, true},   {67, 45, 1, true},
                                   {67, 45, 3, true}};
  for (MmaKind kind : kKinds)
    for (bool sums : {false, true})
      for (const Case &c : cases) {
        CAPTURE(mma_kind_name(kind));
        CAPTURE(sums);
        CAPTURE(c.M);
        CAPTURE(c.N);
        CAPTURE(c.K);
        CAPTURE(c.padded);
        MmaTiling t = one_tile(kind, c.padded);
        if (sums)
          t.tile_stores = TileStores::SumsThroughShared;
        // The products are exact in f32 and their sums nearly; the bf16
        // output rounds each element once (2^-9 relative).
        CHECK(linear_error(mma_instruction(kind).operand, t, c.M, c.N, c.K) < 4e-3);
      }
}

TEST_CASE("the FP8 warpgroup MMA refuses a B stored K x N and operands of another type, naming the rule") {
  MmaTiling t = testing::one_tile_tma_tiling(MmaKind::E4M3_wgmma_m64k32);
  std::string message = user_error_of([&] {
    examples::Gemm g = testing::mma_scheduled(t, examples::Epilogue::BiasGelu, Float8E4M3(), BFloat(16));
    Pipeline(g.out).loop_nest();
  });
  CHECK_HAS(message, "e4m3 wgmma reads both operands K-major");
  CHECK_HAS(message, "store it N x K");
  // An e5m2 W under the e4m3 instruction.
  message = user_error_of([&] {
    examples::Fp8Linear g = layer(Float8E4M3(), Float8E5M2(), t);
    Pipeline(g.out).loop_nest();
  });
  CHECK_HAS(message, "e4m3 wgmma multiplies e4m3 values, but input 'W' is e5m2");
  // The 16-bit instruction on FP8 inputs points at the 8-bit one.
  message = user_error_of([&] {
    examples::Fp8Linear g = layer(Float8E4M3(), Float8E4M3(), testing::one_tile_tma_tiling(MmaKind::BF16_wgmma_m64k16));
    Pipeline(g.out).loop_nest();
  });
  CHECK_HAS(message, "choose the instruction for e4m3 (e4m3 wgmma, a warpgroup MMA)");
  // A k step of 64 is half a swizzled row of 8-bit elements.
  t.k_step = 64;
  message = user_error_of([&] { layer(Float8E4M3(), Float8E4M3(), t); });
  CHECK_HAS(message, "128-byte swizzled rows of 128 elements");
}

TEST_CASE("FP8 warpgroup MMA kernels assemble for sm_90a without spills, serialized MMAs or injected waits") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  GpuTarget target = parse_gpu_target("sm_90a");
  for (MmaKind kind : kKinds) {
    // The default at 4096^3 (128 x 256 tiles, TMA, the tile stored through
    // shared memory) and the padded copies' form.
    MmaTiling wide = default_mma_tiling(kind, 4096, 4096, 4096, target.sm_count());
    MmaTiling padded = default_mma_tiling(kind, 4093, 4091, 4097, target.sm_count());
    REQUIRE(padded.tma_padded_copies == PaddedCopies::Both);
    for (const MmaTiling &t : {wide, padded}) {
      INFO(t.str());
      examples::Fp8Linear g = layer(mma_instruction(kind).operand, mma_instruction(kind).operand, t);
      Pipeline pipeline(g.out);
      const std::string &ptx = pipeline.ptx(target);
      const char *type = mma_instruction(kind).ptx_type;
      // k32, 8-bit operands, and no transpose immediates (they have none).
      CHECK_HAS(ptx, str_cat("wgmma.mma_async.sync.aligned.m64n", t.warp_n, "k32.f32.", type, ".", type));
      CHECK_HAS(ptx, "p, 1, 1;");
      CHECK_HAS(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
      PtxasResult assembled = pipeline.assemble(target);
      coalesce::testing::check_assembled_cleanly(assembled, t.tma_padded_copies == PaddedCopies::Both ? 3 : 1);
      MESSAGE(t.str(), ": ", assembled.kernels.front().registers, " registers");
    }
  }
}

TEST_CASE("FP8 with its sums staged assembles without spills at 4096^3, sizes at run time and fixed") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  GpuTarget target = parse_gpu_target("sm_90a");
  MmaTiling t = default_mma_tiling(MmaKind::E4M3_wgmma_m64k32, 4096, 4096, 4096, target.sm_count());
  t.tile_stores = TileStores::SumsThroughShared;
  examples::Fp8LinearForm fixed;
  fixed.M = fixed.N = fixed.K = Expr(4096);
  for (const examples::Fp8LinearForm &form : {examples::Fp8LinearForm{}, fixed}) {
    CAPTURE(form.M.defined());
    examples::Fp8Linear g(Float8E4M3(), Float8E4M3(), form);
    g.schedule_mma(t);
    Pipeline pipeline(g.out);
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(target));
  }
}

TEST_CASE("the FP8 warpgroup MMA with cp.async copies runs on the CPU and assembles for sm_90a") {
  MmaTiling t = testing::one_tile_tma_tiling(MmaKind::E4M3_wgmma_m64k32);
  t.tma = false;
  examples::Fp8Linear g = layer(Float8E4M3(), Float8E4M3(), t);
  Pipeline pipeline(g.out);
  // 16 one-byte elements per vector copy where the rows allow, else one at a time.
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{131, 136, 272}, {131, 133, 67}, {67, 45, 1}, {67, 45, 3}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CHECK(examples::fp8_linear_error(Float8E4M3(), Float8E4M3(), M, N, K, [&](const Arguments &args, Buffer &out) {
            pipeline.realize_on_cpu(args, out);
          }) < 4e-3);
  }
  // Run on the H200 by coalesce-gpu-check (e4m3 and e5m2), so GPU targets compile it.
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
  coalesce::testing::check_assembled_cleanly(assembled, 1);
}
