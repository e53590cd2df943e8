// Warpgroup MMA (Hopper's wgmma) schedules on the CPU, which runs the same
// statements the GPU runs, against the double reference at square and
// ragged shapes with the K = 1 / K = 3 pair; their legality rules; and their
// kernels through ptxas, where the silent degradations ptxas reports only as
// information (serialized MMAs, injected waits) fail the test.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

/// The multiprocessors the default target's GPU has (the tilings fill them).
const int kTargetSms = GpuTarget().sm_count();

namespace {

Type operand_type(MmaKind kind) { return kind == MmaKind::BF16_wgmma_m64k16 ? BFloat(16) : Float(16); }

// The default tiling with every thread's cp.async copies (test_tma covers
// the TMA's).
MmaTiling cp_async_tiling(MmaKind kind, int64_t M, int64_t N) {
  MmaTiling t = default_mma_tiling(kind, M, N, kTargetSms);
  t.tma = false;
  return t;
}

// One warpgroup on a 64 x 64 tile: the smallest wgmma schedule, so ragged
// shapes cover several blocks on the CPU quickly.
MmaTiling small_group_tiling(MmaKind kind) {
  MmaTiling t = cp_async_tiling(kind, 64, 64);
  t.block_m = 64;
  t.block_n = 64;
  t.warp_m = 64;
  t.warp_n = 64;
  return t;
}

Gemm scheduled(MmaKind kind, const MmaTiling &t, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::mma_scheduled(t, e, operand_type(kind), BFloat(16));
}

double error_against_reference(Pipeline &pipeline, MmaKind kind, int M, int N, int K, Epilogue e) {
  GemmData data = make_data(M, N, K, 11, operand_type(kind));
  return coalesce::testing::cpu_error_against_reference(pipeline, data, M, N, K, e, BFloat(16));
}

// The message of scheduling an unscheduled bf16 GEMM with tiling `t`.
std::string refused_tiling(const MmaTiling &t) {
  Gemm g = make_gemm(Epilogue::None, BFloat(16), BFloat(16));
  // Refused by the primitive or, where the rule needs the algorithm (which
  // operand is staged how), when lowered.
  return coalesce::testing::user_error_of([&] {
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline(g.out).loop_nest();
  });
}

// A bf16 GEMM whose output is laid out for warpgroup MMAs on one 64 x 64
// warpgroup tile, acc fused at the block; the reduction left to the test.
Gemm warpgroup_tiled(MmaKind kind) {
  Gemm g = make_gemm(Epilogue::None, BFloat(16), BFloat(16));
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
      .mma_tile(ii, jj, kind, 64, 64, warp, lane, mi, nj, fi, fj);
  g.out.fuse_epilogue(g.acc, bj);
  return g;
}

} // namespace

TEST_CASE("bf16 and f16 warpgroup MMA GEMMs + bias + GELU match the double reference, ragged shapes included") {
  for (MmaKind kind : {MmaKind::BF16_wgmma_m64k16, MmaKind::F16_wgmma_m64k16}) {
    for (const MmaTiling &t : {small_group_tiling(kind), cp_async_tiling(kind, 4096, 4096)}) {
      INFO(t.str());
      Gemm g = scheduled(kind, t);
      Pipeline pipeline(g.out);
      for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {64, 64, 64}, {127, 129, 131}, {130, 200, 72}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        // Exact sums up to f32 rounding; the output rounded to bf16.
        CHECK(error_against_reference(pipeline, kind, M, N, K, Epilogue::BiasGelu) < 4e-3);
      }
    }
  }
}

TEST_CASE("warpgroup MMA staging once per step, pipelines of 2 to 5 stages and a folded bias compute the same") {
  MmaKind kind = MmaKind::F16_wgmma_m64k16;
  for (int stages : {1, 2, 3, 4, 5}) {
    for (bool fold : {false, true}) {
      CAPTURE(stages);
      CAPTURE(fold);
      MmaTiling t = small_group_tiling(kind);
      // 1: one tile, staged at each step (found by the fuzzer, seed 21409).
      t.stages = std::max(stages, 2);
      t.double_buffered = stages > 1;
      Gemm g = make_gemm(Epilogue::BiasGelu, operand_type(kind), BFloat(16));
      if (fold)
        g.out.fold_bias_into_init();
      schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
      Pipeline pipeline(g.out);
      // K = 64 (one step: only the peeled one), 130 (two and a tail), 320.
      for (int K : {64, 130, 320}) {
        CAPTURE(K);
        CHECK(error_against_reference(pipeline, kind, 70, 72, K, Epilogue::BiasGelu) < 4e-3);
      }
    }
  }
}

TEST_CASE("a warpgroup MMA schedule's fused epilogue runs once, after the whole reduction (K = 1 / K = 3)") {
  MmaKind kind = MmaKind::BF16_wgmma_m64k16;
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = scheduled(kind, small_group_tiling(kind), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, kind, 70, 130, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the loop nest shows the warpgroup MMA, its swizzled tiles and its synchronization") {
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(MmaKind::BF16_wgmma_m64k16);
  t.tma = false;
  Gemm g = scheduled(MmaKind::BF16_wgmma_m64k16, t);
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "warpgroup_mma bf16 wgmma m64n128k16");
  CHECK_HAS(nest, "A: stride 1024 B; B: leading 8192 B, stride 1024 B, mn-major; 128-byte swizzle");
  CHECK_HAS(nest, "bit_xor(");
  CHECK_HAS(nest, "fence_proxy_async()");
  CHECK_HAS(nest, "wgmma_fence()");
  CHECK_HAS(nest, "wgmma_commit()");
  CHECK_HAS(nest, "wgmma_wait(0)");
  // 64-column blocks of the swizzled tiles: A [3][1][128][64], B [3][2][64][64].
  CHECK_HAS(nest, "allocate A_shared[3][1][128][64] bf16 in shared");
  CHECK_HAS(nest, "allocate B_shared[3][2][64][64] bf16 in shared");
}

TEST_CASE("a warpgroup MMA schedule that breaks a rule is rejected with the rule") {
  using coalesce::testing::user_error_of;
  MmaKind kind = MmaKind::BF16_wgmma_m64k16;
  SUBCASE("a warpgroup tile that is not 64 rows") {
    MmaTiling t = small_group_tiling(kind);
    t.warp_m = 32;
    CHECK_HAS(refused_tiling(t), "64 x N tile per warpgroup");
  }
  SUBCASE("a 128-row warpgroup tile wider than 128 columns") {
    MmaTiling t = small_group_tiling(kind);
    t.block_m = 128;
    t.block_n = 256;
    t.warp_m = 128;
    t.warp_n = 256;
    CHECK_HAS(refused_tiling(t), "128 x N with N up to 128");
  }
  SUBCASE("columns that are not whole swizzle atoms of a B stored K x N") {
    MmaTiling t = small_group_tiling(kind);
    t.warp_n = 32;
    t.block_n = 64;
    CHECK_HAS(refused_tiling(t), "'B' is read with its rows along k (stored K x N), in swizzled atoms of 64 columns, "
                                 "so N must be a multiple of 64");
  }
  SUBCASE("columns that are not a multiple of 8") {
    MmaTiling t = small_group_tiling(kind);
    t.warp_n = 60;
    t.block_n = 60;
    CHECK_HAS(refused_tiling(t), "N a multiple of 8 up to 256");
  }
  SUBCASE("a k step that is not whole 128-byte rows") {
    MmaTiling t = small_group_tiling(kind);
    t.k_step = 32;
    CHECK_HAS(refused_tiling(t), "k step must be a positive multiple of 64");
  }
  SUBCASE("an operand left in global memory") {
    Gemm g = warpgroup_tiled(kind);
    RVar ko("ko"), kk("kk");
    g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, {}, OneBuffer{true});
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "stage 'B' in shared memory at 'ko'");
  }
  SUBCASE("padding, which would move what the descriptor locates") {
    Gemm g = warpgroup_tiled(kind);
    SharedLayout padded;
    padded.padding = 8;
    RVar ko("ko"), kk("kk");
    g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, padded, OneBuffer{true})
        .stage_in_shared(g.B, ko, padded, OneBuffer{true});
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }), "leave SharedLayout's padding at 0");
  }
  SUBCASE("a target without warpgroup MMAs") {
    Gemm g = scheduled(kind, small_group_tiling(kind));
    Pipeline pipeline(g.out);
    CHECK_HAS(user_error_of([&] { pipeline.ptx(parse_gpu_target("sm_90")); }), "only target sm_90a has");
    CHECK_HAS(user_error_of([&] { pipeline.ptx(parse_gpu_target("sm_80")); }), "only target sm_90a has");
  }
}

TEST_CASE("warpgroup MMA kernels assemble for sm_90a without spills, serialized MMAs or injected waits") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling single = small_group_tiling(MmaKind::BF16_wgmma_m64k16);
  single.double_buffered = false; // one tile, staged at each step
  single.stages = 2;
  for (MmaTiling t : {default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, GpuTarget().sm_count()),
                      default_mma_tiling(MmaKind::F16_wgmma_m64k16, 4096, 4096, GpuTarget().sm_count()), single}) {
    MmaKind kind = t.kind;
    Gemm g = scheduled(kind, t);
    Pipeline pipeline(g.out);
    GpuTarget target = parse_gpu_target("sm_90a");
    const std::string &ptx = pipeline.ptx(target);
    CHECK_HAS(ptx, str_cat("wgmma.mma_async.sync.aligned.m64n", t.warp_n, "k16.f32"));
    CHECK_HAS(ptx, "wgmma.fence.sync.aligned");
    CHECK_HAS(ptx, "fence.proxy.async.shared::cta");
    PtxasResult assembled = pipeline.assemble(target);
    coalesce::testing::check_assembled_cleanly(assembled);
    MESSAGE(t.str(), ": ", assembled.kernels.front().registers, " registers, schedule to PTX in ",
            pipeline.last_ptx_compile_ms(), " ms");
  }
}
