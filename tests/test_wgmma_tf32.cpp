// The tf32 warpgroup MMA (wgmma m64nNk8 .tf32): f32 GEMMs whose inputs are
// rounded to tf32, with A and B both K-major in shared memory (B stored
// transposed by the copies). On the CPU, which runs the statements the GPU
// runs, against the double reference at square and ragged shapes, with the
// K = 1 / K = 3 pair and every staging form; the rounding of the staged
// tiles; the legality rules; and the kernels through ptxas.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::TF32_wgmma_m64k8;

void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
}

// One warpgroup on a 64 x 64 tile: ragged shapes cover several blocks on
// the CPU quickly.
MmaTiling small_group_tiling() { return coalesce::testing::one_tile_tiling(kKind); }

Gemm scheduled(const MmaTiling &t, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::mma_scheduled(t, e, Float(32), Float(32));
}

// ||ours - reference|| / ||reference|| on data rounded to tf32 first
// (`round` false: the inputs as drawn; the schedule rounds them).
double error_on_tf32_data(Pipeline &pipeline, int M, int N, int K, Epilogue e, bool round = true) {
  GemmData data = make_data(M, N, K, 17);
  GemmData rounded = data;
  round_to_tf32(rounded.a);
  round_to_tf32(rounded.b);
  Buffer out({M, N});
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(round ? rounded : data, M, N, K, e), out);
  if (count_nan(out))
    return 1.0;
  return relative_error(out, reference(rounded, M, N, K, e));
}

// A tf32 GEMM laid out for warpgroup MMAs on one 64 x 64 tile, acc fused at
// the block; the reduction left to the test.
Gemm warpgroup_tiled() { return coalesce::testing::mma_tiled(kKind, Float(32), Float(32)); }

std::string refused(Gemm &g, const SharedLayout &a, const SharedLayout &b, int k_step = 32) {
  RVar ko("ko"), kk("kk");
  return coalesce::testing::user_error_of([&] {
    g.acc.update().mma(g.k, ko, kk, k_step).allow_reassociation().stage_in_shared(g.A, ko, a)
        .stage_in_shared(g.B, ko, b);
    Pipeline(g.out).loop_nest();
  });
}

SharedLayout zero_filled() {
  SharedLayout layout;
  layout.zero_fill = true;
  return layout;
}

} // namespace

TEST_CASE("tf32 warpgroup MMA GEMMs + bias + GELU match the double reference on tf32 data, ragged shapes included") {
  for (const MmaTiling &t : {small_group_tiling(), default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count())}) {
    INFO(t.str());
    Gemm g = scheduled(t);
    Pipeline pipeline(g.out);
    // 64 x 64 x 32: one k step; 127 x 129 x 131: ragged everywhere, K not a
    // multiple of 4 (element copies); 130 x 200 x 72: K a multiple of 4
    // (16-byte copies of A), ragged last step.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {64, 64, 32}, {127, 129, 131}, {130, 200, 72}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_on_tf32_data(pipeline, M, N, K, Epilogue::BiasGelu) < 1e-5);
    }
  }
}

TEST_CASE("a tf32 warpgroup MMA rounds its f32 inputs to tf32, as the warp MMA does") {
  Gemm g = scheduled(small_group_tiling(), Epilogue::None);
  Pipeline pipeline(g.out);
  // Against the product of the rounded inputs: exact up to f32 sums.
  CHECK(error_on_tf32_data(pipeline, 70, 72, 100, Epilogue::None, /*round=*/false) < 1e-6);
  // The staged tiles hold tf32 values: each thread rounds what its
  // asynchronous copies wrote before the tile is published (the wgmma reads
  // shared memory as it is stored), A's 16-byte vectors and B's elements.
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "= round_to_tf32(A_shared[");
  CHECK_HAS(nest, "= round_to_tf32(B_shared[");
}

TEST_CASE("tf32 warpgroup MMA staging once per step, through registers and in pipelines of 2 to 5 stages agree") {
  for (int stages : {1, 2, 3, 5}) {
    for (bool async_copy : {true, false}) {
      if (stages != 2 && !async_copy)
        continue; // one buffer is copied synchronously, a pipeline asynchronously
      CAPTURE(stages);
      CAPTURE(async_copy);
      Gemm g = warpgroup_tiled();
      SharedLayout layout = zero_filled();
      layout.double_buffered = stages > 1;
      layout.stages = std::max(stages, 2);
      layout.async_copy = async_copy;
      RVar ko("ko"), kk("kk");
      g.acc.update().mma(g.k, ko, kk, 32).allow_reassociation().stage_in_shared(g.A, ko, layout)
          .stage_in_shared(g.B, ko, layout);
      Pipeline pipeline(g.out);
      // K = 32 (one step), 130 (five and a tail, element copies), 320.
      for (int K : {32, 130, 320}) {
        CAPTURE(K);
        CHECK(error_on_tf32_data(pipeline, 70, 72, K, Epilogue::None, /*round=*/false) < 1e-6);
      }
    }
  }
}

TEST_CASE("a tf32 warpgroup MMA schedule's fused epilogue runs once, after the whole reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::Bias, Epilogue::BiasGelu}) {
    Gemm g = scheduled(small_group_tiling(), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      GemmData data = make_data(70, 130, K, 11);
      round_to_tf32(data.a);
      round_to_tf32(data.b);
      Buffer out({70, 130});
      pipeline.realize_on_cpu(gemm_arguments(data, 70, 130, K, e), out);
      CHECK(relative_error(out, unfused_chain(data, 70, 130, K, e)) < 1e-6);
    }
  }
}

TEST_CASE("the loop nest shows the tf32 warpgroup MMA, both operands K-major, B stored transposed") {
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
  CHECK(t.k_step == 32);
  CHECK(t.stages == 3);
  CHECK_FALSE(t.uses_tma());
  CHECK(t.warp_m == 64);
  CHECK(t.warp_n == 128);
  Gemm g = scheduled(t);
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "warpgroup_mma tf32 wgmma m64n128k8");
  // K-major both: no transpose flags, leading offsets unused (16).
  CHECK_HAS(nest, "A: stride 1024 B; B: leading 16 B, stride 1024 B; 128-byte swizzle");
  // 32-element (128-byte) rows: A [3][1][128][32] as [m][k], B [3][1][128][32] as [n][k].
  CHECK_HAS(nest, "allocate A_shared[3][1][128][32] f32 in shared");
  CHECK_HAS(nest, "allocate B_shared[3][1][128][32] f32 in shared");
  CHECK_HAS(nest, "fence_proxy_async()");
  CHECK_HAS(nest, "wgmma_wait(1)");
  CHECK(nest.find("tensor_copy") == std::string::npos);
}

TEST_CASE("a tf32 warpgroup MMA schedule that breaks a rule is rejected with the rule") {
  using coalesce::testing::user_error_of;
  SUBCASE("a k step that is not whole 128-byte rows of f32") {
    Gemm g = warpgroup_tiled();
    CHECK_HAS(refused(g, zero_filled(), zero_filled(), 16), "k step must be a positive multiple of 32");
  }
  SUBCASE("the TMA, which cannot transpose B") {
    MmaTiling t = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
    t.tma = true;
    Gemm g = make_gemm(Epilogue::None);
    CHECK_HAS(user_error_of([&] {
                schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
                Pipeline(g.out).loop_nest();
              }),
              "the TMA cannot transpose; use the cp.async copies (tma = false)");
  }
  SUBCASE("a transposition asked for by the schedule: the compiler lays out B") {
    Gemm g = warpgroup_tiled();
    SharedLayout transposed = zero_filled();
    transposed.transposed = true;
    CHECK_HAS(refused(g, zero_filled(), transposed), "the compiler stores B K-major itself");
  }
  SUBCASE("padding") {
    Gemm g = warpgroup_tiled();
    SharedLayout padded = zero_filled();
    padded.padding = 4;
    CHECK_HAS(refused(g, padded, zero_filled()), "leave SharedLayout's padding at 0");
  }
  SUBCASE("16-bit inputs") {
    Gemm g = make_gemm(Epilogue::None, BFloat(16), Float(32));
    MmaTiling t = small_group_tiling();
    CHECK_HAS(user_error_of([&] {
                schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
                Pipeline(g.out).loop_nest();
              }),
              "tf32 wgmma multiplies f32 values, but input 'A' is bf16");
  }
  SUBCASE("a target without warpgroup MMAs") {
    Gemm g = scheduled(small_group_tiling());
    Pipeline pipeline(g.out);
    CHECK_HAS(user_error_of([&] { pipeline.ptx(parse_gpu_target("sm_90")); }), "only target sm_90a has");
  }
}

TEST_CASE("tf32 warpgroup MMA kernels assemble for sm_90a without spills, serialized MMAs or injected waits") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling single = small_group_tiling();
  single.double_buffered = false; // one tile, staged at each step
  single.stages = 2;
  for (MmaTiling t : {default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count()), single}) {
    Gemm g = scheduled(t);
    Pipeline pipeline(g.out);
    GpuTarget target = parse_gpu_target("sm_90a");
    const std::string &ptx = pipeline.ptx(target);
    // k8, tf32 operands, and no transpose immediates (tf32 has none).
    CHECK_HAS(ptx, str_cat("wgmma.mma_async.sync.aligned.m64n", t.warp_n, "k8.f32.tf32.tf32"));
    CHECK_HAS(ptx, "p, 1, 1;");
    CHECK_HAS(ptx, "wgmma.fence.sync.aligned");
    CHECK_HAS(ptx, "fence.proxy.async.shared::cta");
    PtxasResult assembled = pipeline.assemble(target);
    coalesce::testing::check_assembled_cleanly(assembled);
    MESSAGE(t.str(), ": ", assembled.kernels.front().registers, " registers, schedule to PTX in ",
            pipeline.last_ptx_compile_ms(), " ms");
  }
}
