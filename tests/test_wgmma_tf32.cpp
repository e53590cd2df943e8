// The tf32 warpgroup MMA (wgmma m64nNk8 .tf32): f32 GEMMs whose inputs are
// rounded to tf32, with A and B both K-major in shared memory. Two forms:
// the TMA's (the default), which reads copies of A and B made first by
// kernels of their own, rounded to tf32 and B transposed; and every
// thread's cp.async copies, which transpose B element by element and round
// the tiles in shared memory. On the CPU, which runs the statements the GPU
// runs, against the double reference at square and ragged shapes, with the
// K = 1 / K = 3 pair and every staging form; the rounding; the legality
// rules; and the kernels through ptxas.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"
#include "scheduler/Environment.h"
#include "scheduler/VerifyTensorCopies.h"

#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::TF32_wgmma_m64k8;

void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
}

// One warpgroup on a 64 x 64 tile, the TMA's copies (the default): ragged
// shapes cover several blocks on the CPU quickly.
MmaTiling small_tma_tiling() {
  MmaTiling t = coalesce::testing::one_tile_tiling(kKind);
  REQUIRE(t.uses_tma());
  REQUIRE(t.tma_padded_copies == PaddedCopies::Both);
  return t;
}

// The same with every thread's cp.async copies.
MmaTiling small_group_tiling() {
  MmaTiling t = coalesce::testing::one_tile_tiling(kKind);
  t.tma = false;
  t.tma_padded_copies = PaddedCopies::None;
  return t;
}

// The cp.async form at 4096^3: two warpgroups of 64 x 128 on 128 x 128,
// three stages, one block per SM (its copies need 196 registers).
MmaTiling cp_async_tiling() {
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.min_blocks_per_sm = 1;
  t.tma = false;
  t.tma_padded_copies = PaddedCopies::None;
  return t;
}

MmaTiling default_tiling() { return default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count()); }

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

TileCopies zero_filled() { return OneBuffer{true}; }

std::string refused(Gemm &g, const SharedLayout &a, const SharedLayout &b, int k_step = 32,
                    const TileCopies &a_copies = zero_filled(), const TileCopies &b_copies = zero_filled()) {
  RVar ko("ko"), kk("kk");
  return coalesce::testing::user_error_of([&] {
    g.acc.update().mma(g.k, ko, kk, k_step).allow_reassociation().stage_in_shared(g.A, ko, a, a_copies)
        .stage_in_shared(g.B, ko, b, b_copies);
    Pipeline(g.out).loop_nest();
  });
}

} // namespace

TEST_CASE("tf32 warpgroup MMA GEMMs + bias + GELU match the double reference on tf32 data, ragged shapes included") {
  for (const MmaTiling &t : {small_group_tiling(), small_tma_tiling(), cp_async_tiling(), default_tiling()}) {
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
  SUBCASE("cp.async copies: in shared memory") {
    Gemm g = scheduled(small_group_tiling(), Epilogue::None);
    Pipeline pipeline(g.out);
    // Against the product of the rounded inputs: exact up to f32 sums.
    CHECK(error_on_tf32_data(pipeline, 70, 72, 100, Epilogue::None, /*round=*/false) < 1e-6);
    // The staged tiles hold tf32 values: each thread rounds what its
    // asynchronous copies wrote before the tile is published (the wgmma
    // reads shared memory as it is stored), A's 16-byte vectors and B's
    // elements.
    std::string nest = pipeline.loop_nest();
    CHECK_HAS(nest, "= round_to_tf32(A_shared[");
    CHECK_HAS(nest, "= round_to_tf32(B_shared[");
  }
  SUBCASE("the TMA's copies: in the copies it reads") {
    Gemm g = scheduled(small_tma_tiling(), Epilogue::None);
    Pipeline pipeline(g.out);
    // K not a multiple of 4 (rows padded), K a multiple of 32, K past a
    // transposing tile's 32 (several tiles along K).
    for (int K : {100, 64, 131}) {
      CAPTURE(K);
      CHECK(error_on_tf32_data(pipeline, 70, 72, K, Epilogue::None, /*round=*/false) < 1e-6);
    }
    std::string nest = pipeline.loop_nest();
    CHECK_HAS(nest, "A_padded.A_piece[A_e] = round_to_tf32(select(");
    CHECK_HAS(nest, "B_padded.B_transpose[B_y + B_e*8, B_x] = round_to_tf32(select(");
    // The TMA copies them as they are: nothing rounds the tiles.
    CHECK(nest.find("= round_to_tf32(A_shared[") == std::string::npos);
    CHECK(nest.find("= round_to_tf32(B_shared[") == std::string::npos);
  }
}

TEST_CASE("the TMA's copy of a tf32 B is B transposed, through 32 x 32 tiles, its rows padded to 128 bytes") {
  Gemm g = scheduled(small_tma_tiling(), Epilogue::None);
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  // One block per tile of the N x K4 copy: read along B's rows, written
  // along the copy's, from the shared tile's columns.
  CHECK_HAS(nest, "for B_tile in gpu_block.x(0, ceil(N/32)*(ceil(ceil(K/32)*32/32))):  # a kernel of its own");
  CHECK_HAS(nest, "allocate B_padded.B_transpose[32][33] f32 in shared");
  CHECK_HAS(nest, "= B_padded.B_transpose[B_x_store, B_y_store + B_e_store*8]");
  // A's copy keeps A's rows.
  CHECK_HAS(nest, "for A_row in gpu_block.x(0, M):  # a kernel of its own");
  // Boxes of the copies: 64 rows of B's copy (n) by one 128-byte row of k.
  CHECK_HAS(nest, "tensor_copy A_padded[bi*64, 0] box 64x32 (0 outside A_padded)");
  CHECK_HAS(nest, "tensor_copy B_padded[bj*64, 0] box 64x32 (0 outside B_padded)");
  // What the copies hold, at a shape where every guard is met: B's copy is
  // N x K4 with zeros past K, rounded.
  const int M = 3, N = 37, K = 35;
  GemmData data = make_data(M, N, K, 5);
  Buffer out({M, N});
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::None), out);
  GemmData rounded = data;
  round_to_tf32(rounded.a);
  round_to_tf32(rounded.b);
  CHECK(relative_error(out, reference(rounded, M, N, K, Epilogue::None)) < 1e-6);
}

TEST_CASE("tf32 warpgroup MMA staging once per step, through registers and in pipelines of 2 to 5 stages agree") {
  for (int stages : {1, 2, 3, 5}) {
    for (bool async_copy : {true, false}) {
      if (stages != 2 && !async_copy)
        continue; // one buffer is copied synchronously, a pipeline asynchronously
      CAPTURE(stages);
      CAPTURE(async_copy);
      Gemm g = warpgroup_tiled();
      TileCopies copies = zero_filled();
      if (stages > 1)
        copies = async_copy ? TileCopies(AsyncCopies{stages, true}) : TileCopies(RegisterDoubleBuffer{true});
      RVar ko("ko"), kk("kk");
      g.acc.update().mma(g.k, ko, kk, 32).allow_reassociation().stage_in_shared(g.A, ko, {}, copies)
          .stage_in_shared(g.B, ko, {}, copies);
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
  for (Epilogue e : {Epilogue::Bias, Epilogue::BiasGelu})
  for (const MmaTiling &t : {small_group_tiling(), small_tma_tiling()}) {
    INFO(t.str());
    Gemm g = scheduled(t, e);
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
  SUBCASE("the default: TMA copies of the rounded copies, 128 x 256 tiles") {
    MmaTiling t = default_tiling();
    CHECK(t.k_step == 32);
    CHECK(t.stages == 4);
    CHECK(t.uses_tma());
    CHECK(t.tma_padded_copies == PaddedCopies::Both);
    CHECK(t.warp_m == 64);
    CHECK(t.warp_n == 256);
    CHECK_HAS(t.str(), "from copies of A and B rounded to tf32, B transposed");
    Gemm g = scheduled(t);
    std::string nest = Pipeline(g.out).loop_nest();
    CHECK_HAS(nest, "warpgroup_mma tf32 wgmma m64n256k8");
    CHECK_HAS(nest, "A: stride 1024 B; B: leading 16 B, stride 1024 B; 128-byte swizzle");
    // A [4][1][128][32] as [m][k], B [4][1][256][32] as [n][k]: what the
    // TMA writes from boxes of the copies, B's 256 rows along n.
    CHECK_HAS(nest, "allocate A_shared[4][1][128][32] f32 in shared");
    CHECK_HAS(nest, "allocate B_shared[4][1][256][32] f32 in shared");
    CHECK_HAS(nest, "tensor_copy B_padded[bj*256, ko*32 + 96] box 256x32 (0 outside B_padded)");
    CHECK_HAS(nest, "mbarrier_expect_tx(A_full[");
    // The TMA writes through the async proxy: no fence for generic stores.
    CHECK(nest.find("fence_proxy_async()") == std::string::npos);
    CHECK_HAS(nest, "wgmma_wait(1)");
  }
  SUBCASE("cp.async copies, 128 x 128 tiles") {
    Gemm g = scheduled(cp_async_tiling());
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
    CHECK(nest.find("_padded") == std::string::npos);
  }
}

TEST_CASE("a tf32 warpgroup MMA schedule that breaks a rule is rejected with the rule") {
  using coalesce::testing::user_error_of;
  SUBCASE("a k step that is not whole 128-byte rows of f32") {
    Gemm g = warpgroup_tiled();
    CHECK_HAS(refused(g, {}, {}, 16), "k step must be a positive multiple of 32");
  }
  SUBCASE("the TMA without the copies that round and transpose") {
    MmaTiling t = default_tiling();
    t.tma_padded_copies = PaddedCopies::None;
    Gemm g = make_gemm(Epilogue::None);
    CHECK_HAS(user_error_of([&] {
                schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
                Pipeline(g.out).loop_nest();
              }),
              "'A' is staged with TmaCopies, but tf32 wgmma multiplies the bits it finds in shared memory, which "
              "must be rounded to tf32 (and B K-major, transposed where B is stored K x N), and the TMA copies "
              "boxes as they lie; set TmaCopies::padded_copy to PaddedCopy::Always (a kernel of its own first "
              "copies 'A' rounded, a K x N B transposed, for the TMA to read, on every launch), or use AsyncCopies");
  }
  SUBCASE("the padded copy for one input only") {
    // padded_copy is TmaCopies' own (the padded copy without the TMA
    // cannot be written), and each input's: B's TMA would read B unrounded.
    Gemm g = warpgroup_tiled();
    TmaCopies copied;
    copied.stages = 3;
    copied.padded_copy = PaddedCopy::Always;
    TmaCopies as_it_lies = copied;
    as_it_lies.padded_copy = PaddedCopy::Never;
    CHECK_HAS(refused(g, {}, {}, 32, copied, as_it_lies),
              "'B' is staged with TmaCopies, but tf32 wgmma multiplies the bits it finds in shared memory");
  }
  SUBCASE("a transposition asked for by the schedule: the compiler lays out B") {
    Gemm g = warpgroup_tiled();
    SharedLayout transposed;
    transposed.transposed = true;
    CHECK_HAS(refused(g, {}, transposed), "the compiler stores B K-major itself");
  }
  SUBCASE("padding") {
    Gemm g = warpgroup_tiled();
    SharedLayout padded;
    padded.padding = 4;
    CHECK_HAS(refused(g, padded, {}), "leave SharedLayout's padding at 0");
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
  // 128 x 128 tiles, two blocks per SM (no default's since 128 x 256 tiles
  // fill nine in ten SMs wherever these would fill their slots).
  MmaTiling two_blocks = default_mma_tiling(kKind, 2048, 2048, GpuTarget().sm_count());
  two_blocks.block_n = two_blocks.warp_n = 128;
  two_blocks.min_blocks_per_sm = 2;
  two_blocks.stages = 3;
  for (MmaTiling t : {default_tiling(), two_blocks, cp_async_tiling(), single}) {
    INFO(t.str());
    Gemm g = scheduled(t);
    Pipeline pipeline(g.out);
    GpuTarget target = parse_gpu_target("sm_90a");
    const std::string &ptx = pipeline.ptx(target);
    // k8, tf32 operands, and no transpose immediates (tf32 has none).
    CHECK_HAS(ptx, str_cat("wgmma.mma_async.sync.aligned.m64n", t.warp_n, "k8.f32.tf32.tf32"));
    CHECK_HAS(ptx, "p, 1, 1;");
    CHECK_HAS(ptx, "wgmma.fence.sync.aligned");
    if (t.uses_tma()) {
      // Boxes from the copies, each made by a kernel of its own.
      CHECK_HAS(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
      CHECK_HAS(ptx, "_A_padded(");
      CHECK_HAS(ptx, "_B_padded(");
    } else {
      CHECK_HAS(ptx, "fence.proxy.async.shared::cta");
    }
    PtxasResult assembled = pipeline.assemble(target);
    // With the TMA: the GEMM and the copies of A and B.
    coalesce::testing::check_assembled_cleanly(assembled, t.uses_tma() ? 3 : 1);
    MESSAGE(t.str(), ": ", assembled.kernels.front().registers, " registers, schedule to PTX in ",
            pipeline.last_ptx_compile_ms(), " ms");
  }
}

TEST_CASE("the verifier after lowering refuses a TMA copy of f32 tiles from anything but a copy rounded to tf32") {
  // Hand-built statements against the environment of a real pipeline:
  // what a pass that let the TMA read the input itself would leave behind
  // (the wgmma would multiply unrounded bits; the CPU rounds them).
  auto copy_of = [](const std::string &input) {
    Expr slot = Load::make(Float(32), "A_shared", {Expr(0)});
    Expr barrier = Load::make(UInt(64), "A_full", {Expr(0)});
    return TensorCopy::make(input, {Expr(0), Expr(0)}, {64, 32}, slot, barrier, Evaluate::make(Expr(0)));
  };
  using coalesce::testing::internal_error_of;
  Gemm g = scheduled(small_tma_tiling());
  Environment env = make_environment(g.out);
  // Rows of whole 16 bytes: the describability test holds, the rounding not.
  Stmt describable = IfThenElse::make(Variable::make(Int(32), "K") % 4 == 0, copy_of("A"));
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(describable, env); }),
            "a TMA copy of f32 elements reads 'A', which is not a copy rounded to tf32");
  CHECK(internal_error_of([&] { verify_tensor_copies(copy_of("A_padded"), env); }) == "(no error)");
  CHECK(internal_error_of([&] { verify_tensor_copies(copy_of("B_padded"), env); }) == "(no error)");
}

// The TMA's tf32 form with the pipeline's other primitives: producer warps
// (one warp, a warpgroup), register reallocation, a persistent grid, blocks
// in groups, the reduction split across blocks (both modes).
std::vector<MmaTiling> tma_variants() {
  std::vector<MmaTiling> variants;
  for (int producers : {1, 4}) {
    MmaTiling t = small_tma_tiling();
    t.producer_warps = producers;
    t.min_blocks_per_sm = 1;
    variants.push_back(t);
  }
  MmaTiling realloc = default_tiling(); // 128 x 256, two 64 x 256 warpgroups
  realloc.producer_warps = 4;
  realloc.producer_registers = 40;
  variants.push_back(realloc);
  MmaTiling persistent = small_tma_tiling();
  persistent.persistent_blocks = 3;
  persistent.block_group_rows = 2;
  variants.push_back(persistent);
  for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic}) {
    MmaTiling split = small_tma_tiling();
    split.split_k = 3;
    split.split_k_mode = mode;
    variants.push_back(split);
  }
  // Where the pipeline runs past the main loop, the staged sums keep their
  // own bytes: fewer stages, or the tile stored directly.
  for (MmaTiling &t : variants) {
    stage_values_where_sums_do_not_fit(t);
    fit_output_tile_beside_stages(t);
  }
  return variants;
}

TEST_CASE("the TMA's tf32 form composes with producer warps, reallocation, persistent grids and split-K") {
  for (const MmaTiling &t : tma_variants()) {
    INFO(t.str());
    Gemm g = scheduled(t);
    Pipeline pipeline(g.out);
    // Unrounded inputs: the copies round them.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {67, 45, 1}, {67, 45, 3}, {131, 136, 197}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_on_tf32_data(pipeline, M, N, K, Epilogue::BiasGelu, /*round=*/false) < 1e-5);
    }
    if (ptxas_available()) {
      PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
      coalesce::testing::check_assembled_cleanly(assembled, 3);
    }
  }
}
