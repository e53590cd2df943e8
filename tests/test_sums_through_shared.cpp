// gpu_tile_stores(TileStores::SumsThroughShared) (StageOutputTiles.h): a
// block writes the sums its epilogue reads into shared tiles and computes
// the epilogue in the copy-out, one 16-byte vector of the output per step
// of a loop that is not unrolled. The CPU runs the same statements: bit-
// equal to the direct stores at ragged shapes (rows of 8 and of 4 bf16
// vectors, and rows that are neither), for bf16, f16 and f32 outputs, with
// persistent blocks and producer warps, with two sums read (SwiGLU), with
// the bias folded into the sums' start, and with epilogues that read
// inputs at the point (a residual, C and scales); the K = 1 / K = 3 pair; the nest and the PTX hold the epilogue once,
// in a loop; ptxas assembles the 128 x 256 kernel without spills; the tiles' names are reserved.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "SplitKGemm.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "examples/ResidualGemm.h"
#include "examples/SwiGlu.h"
#include "runtime/GpuDevice.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

using namespace coalesce;
using coalesce::testing::occurrences;
using coalesce::testing::same_bits;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

MmaTiling tiling(TileStores stores, int persistent_blocks = 0, int producer_warps = 0) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind);
  t.tile_stores = stores;
  t.persistent_blocks = persistent_blocks;
  t.producer_warps = producer_warps;
  return t;
}

Buffer run(Pipeline &pipeline, const GemmData &data, int M, int N, int K, Epilogue e) {
  return coalesce::testing::run(pipeline, data, {M, N, K}, e);
}

using Shapes = std::vector<std::array<int, 3>>;

// `sums` (its sums staged) against `direct` (the same schedule storing
// directly) at each M x N x K: no NaN left, the reference within a bf16
// rounding, and the direct stores' bits.
void check_against_direct(const Gemm &sums, const Gemm &direct, const Shapes &shapes, Epilogue e, uint64_t seed) {
  Pipeline staged(sums.out), plain(direct.out);
  REQUIRE(staged.loop_nest().find("allocate acc_tile[") != std::string::npos);
  for (auto [M, N, K] : shapes) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    GemmData data = make_data(M, N, K, seed, BFloat(16));
    Buffer out = run(staged, data, M, N, K, e);
    CHECK(count_nan(out) == 0);
    CHECK(relative_error(out, reference(data, M, N, K, e)) < 4e-3);
    CHECK(same_bits(out, run(plain, data, M, N, K, e)));
  }
}

} // namespace

TEST_CASE("the epilogue computed from staged sums gives the direct stores' bits") {
  struct Case {
    int persistent, producers;
    Type out;
    Epilogue e;
  };
  for (Case c : std::vector<Case>{{0, 0, BFloat(16), Epilogue::BiasGelu},
                                  {2, 0, BFloat(16), Epilogue::BiasGelu},
                                  {2, 4, BFloat(16), Epilogue::BiasRelu},
                                  {0, 0, Float(16), Epilogue::BiasGelu},
                                  {0, 0, Float(32), Epilogue::BiasGelu}}) {
    CAPTURE(c.persistent);
    CAPTURE(c.producers);
    CAPTURE(c.out);
    auto scheduled = [&](TileStores stores) {
      return coalesce::testing::mma_scheduled(tiling(stores, c.persistent, c.producers), c.e, BFloat(16), c.out);
    };
    // Full and ragged tiles; N = 132 and 70: rows that are not whole
    // 16-byte multiples (the element copy); K = 131: the cp.async copies.
    check_against_direct(scheduled(TileStores::SumsThroughShared), scheduled(TileStores::Direct),
                         {{200, 136, 72}, {128, 128, 64}, {130, 132, 192}, {64, 70, 131}, {1, 8, 8}, {37, 70, 0}}, c.e,
                         31);
  }
}

TEST_CASE("from staged sums the epilogue still runs once per element, after its reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(tiling(TileStores::SumsThroughShared), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      CHECK(coalesce::testing::bf16_error_against_reference(pipeline, 136, 128, K, e, 29) < 4e-3);
    }
  }
}

TEST_CASE("swapped tiles (swap-AB: the tile's rows along j) stage their sums too, with the direct stores' bits") {
  auto scheduled = [](TileStores stores) {
    MmaTiling t = default_mma_tiling(kKind, 64, 64, GpuTarget().sm_count());
    t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
    swap_ab_where_rows_are_few(t, 16, 4096, 4096, GpuTarget().sm_count());
    REQUIRE(t.swap_ab);
    t.split_k = 1;
    t.tile_stores = stores;
    return coalesce::testing::mma_scheduled(t, Epilogue::BiasGelu, BFloat(16), BFloat(16));
  };
  check_against_direct(scheduled(TileStores::SumsThroughShared), scheduled(TileStores::Direct),
                       {{16, 136, 72}, {5, 200, 131}, {16, 64, 1}, {16, 64, 3}}, Epilogue::BiasGelu, 43);
}

TEST_CASE("with the bias folded into the sums' start, the staged sums hold it once: direct stores' bits, K = 1 / 3") {
  // fold_bias_into_init rewrites the definitions (acc starts at bias[j],
  // out = gelu(acc)); the copy-out computes the rewritten one.
  auto scheduled = [](TileStores stores) {
    Gemm g = coalesce::testing::bf16_scheduled(tiling(stores));
    g.out.fold_bias_into_init();
    return g;
  };
  check_against_direct(scheduled(TileStores::SumsThroughShared), scheduled(TileStores::Direct),
                       {{130, 136, 1}, {130, 136, 3}, {64, 70, 131}}, Epilogue::BiasGelu, 41);
}

TEST_CASE("epilogues that read inputs at the point (residual, C, per-column and one-element scales) from staged sums") {
  for (ExtraEpilogue e : {ExtraEpilogue::Residual, ExtraEpilogue::Scaled}) {
    CAPTURE(extra_epilogue_name(e));
    auto scheduled = [&](TileStores stores) {
      ExtraEpilogueGemm g = make_extra_epilogue_gemm(e);
      schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling(stores));
      return g;
    };
    ExtraEpilogueGemm sums = scheduled(TileStores::SumsThroughShared), direct = scheduled(TileStores::Direct);
    Pipeline staged(sums.out), plain(direct.out);
    REQUIRE(staged.loop_nest().find("allocate acc_tile[") != std::string::npos);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{130, 136, 72}, {64, 70, 3}, {67, 45, 1}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      ExtraEpilogueData data(M, N, K, 5);
      Buffer a({M, N}, BFloat(16)), b({M, N}, BFloat(16));
      a.poison();
      b.poison();
      staged.realize_on_cpu(data.arguments(e), a);
      plain.realize_on_cpu(data.arguments(e), b);
      CHECK(relative_error(a, data.reference(e)) < 4e-3);
      CHECK(same_bits(a, b));
    }
  }
}

TEST_CASE("the nest stages the sums, and a loop computes the epilogue a vector at a time") {
  Gemm g = coalesce::testing::bf16_scheduled(tiling(TileStores::SumsThroughShared));
  std::string nest = Pipeline(g.out).loop_nest();
  INFO(nest);
  // f32 sums, rows padded by 32 bytes; no tile of the output's values.
  CHECK(occurrences(nest, "allocate acc_tile[64][72] f32 in shared") == 1);
  CHECK(occurrences(nest, "allocate out_tile[") == 0);
  CHECK(occurrences(nest, "acc_tile[i - bi*64, j - bj*64] = acc[") == 1);
  // N is known at run time: the vector copy (64 x 64 / 8 vectors over 128
  // threads: 4 steps) and the element copy, each a loop that is not
  // unrolled, each with the epilogue once.
  CHECK(occurrences(nest, "for e in serial(0, 4):") == 1);
  CHECK(occurrences(nest, "erfc(") == 2);
  CHECK(occurrences(nest, "= load_vector(out_tile.vector[0], 8)") == 1);
  // 128 threads, 8 vectors a row: a thread's column stays, so its bias is
  // read once before the steps (clamped: the run may lie past N), in each
  // copy, and not inside a step.
  CHECK(occurrences(nest, "allocate out_tile.read0[8] f32 in register") == 1);
  CHECK(occurrences(nest, "allocate out_tile.element_read0[1] f32 in register") == 1);
  CHECK(occurrences(nest, "out_tile.read0[out_tile_lane] = bias[max(min(") == 1);
  CHECK(occurrences(nest, "+ bias[") == 0);
}

TEST_CASE("the 128 x 256 kernel from staged sums: a fraction of the PTX, no spills, fewer registers") {
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, 4096, GpuTarget().sm_count());
  REQUIRE(t.block_n == 256);
  // The default (GemmMmaSchedule.cpp says what it measured).
  REQUIRE(t.tile_stores == TileStores::SumsThroughShared);
  auto with = [&](TileStores stores) {
    MmaTiling staged = t;
    staged.tile_stores = stores;
    return coalesce::testing::mma_scheduled(staged, Epilogue::BiasGelu, BFloat(16), BFloat(16));
  };
  Gemm sums = with(TileStores::SumsThroughShared), shared = with(TileStores::ThroughShared);
  Pipeline staged(sums.out), values(shared.out);
  std::string ptx = staged.ptx(), ptx_values = values.ptx();
  // 128 GELUs per thread, unrolled, against 8 in a loop (and one in the
  // element copy's, for rows that are not whole vectors).
  CHECK(ptx.size() * 2 < ptx_values.size());
  // 128 x 256 bf16 = 4,096 vectors over 256 threads: one store per step.
  CHECK(occurrences(ptx, "st.global.v4.b32") == 1);
  CHECK(occurrences(ptx, "ld.shared.v4.b32") == 2);
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  PtxasResult assembled = staged.assemble(parse_gpu_target("sm_90a"));
  coalesce::testing::check_assembled_cleanly(assembled);
  CHECK(assembled.kernels[0].registers < values.assemble(parse_gpu_target("sm_90a")).kernels[0].registers);
}

TEST_CASE("two sums staged (SwiGLU): the epilogue reads both tiles, the direct stores' bits") {
  auto scheduled = [](TileStores stores) {
    SwiGlu s(BFloat(16), BFloat(16));
    MmaTiling t = default_fused_gemms_tiling(kKind, 0, 0, GpuTarget().sm_count());
    t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
    t.tile_stores = stores;
    s.schedule_mma(t);
    return s;
  };
  SwiGlu sums = scheduled(TileStores::SumsThroughShared), direct = scheduled(TileStores::Direct);
  Pipeline staged(sums.y), plain(direct.y);
  std::string nest = staged.loop_nest();
  CHECK(occurrences(nest, "allocate g_tile[") == 1);
  CHECK(occurrences(nest, "allocate u_tile[") == 1);
  if (ptxas_available()) {
    // The two tiles live together: the kernel's shared layout keeps them
    // apart (verified when the PTX is made), and ptxas takes it cleanly,
    // with no wait injected at a tile's first MMA.
    coalesce::testing::check_assembled_cleanly(staged.assemble(parse_gpu_target("sm_90a")), 1);
  }
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{130, 136, 72}, {64, 70, 131}, {67, 45, 1}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    Buffer x({M, K}, BFloat(16)), Wg({N, K}, BFloat(16)), Wu({N, K}, BFloat(16)), a({M, N}, BFloat(16)),
        b({M, N}, BFloat(16));
    x.fill_random(1);
    Wg.fill_random(2);
    Wu.fill_random(3);
    a.poison();
    b.poison();
    Arguments args{{"x", x}, {"Wg", Wg}, {"Wu", Wu}, {"M", M}, {"N", N}, {"K", K}};
    staged.realize_on_cpu(args, a);
    plain.realize_on_cpu(args, b);
    CHECK(count_nan(a) == 0);
    CHECK(same_bits(a, b));
  }
}

TEST_CASE("for a GPU the staged sums compile to PTX whose copy stores whole vectors") {
  // coalesce-gpu-check --sections=tile-stores passed them on an H200
  // (docs/performance.md), so every GPU compile takes them.
  Gemm g = coalesce::testing::bf16_scheduled(tiling(TileStores::SumsThroughShared));
  Pipeline pipeline(g.out);
  CHECK(pipeline.loop_nest().find("acc_tile") != std::string::npos);
  CHECK(pipeline.ptx().find("st.global.v4.b32") != std::string::npos);
}

TEST_CASE("an Input named like a Func's sums tile is refused") {
  Param M("M"), N("N"), K("K");
  Input A("A", BFloat(16), {M, K}), B("B", BFloat(16), {K, N}), clash("acc_tile", Float(32), {N});
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += cast(Float(32), A(i, k)) * cast(Float(32), B(k, j));
  out(i, j) = acc(i, j) + clash(j);
  out.gpu_tile_stores(TileStores::SumsThroughShared);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); }),
            "the shared-memory tile of the sums of Func 'acc'");
}

TEST_CASE("on a GPU, the epilogue from staged sums gives the direct stores' bits") {
  std::string why_not;
  if (!gpu::gpu_available(&why_not)) {
    MESSAGE("no GPU (", why_not, "): skipping");
    return;
  }
  if (!target_for_current_device().has_warpgroup_mma()) {
    MESSAGE("no warpgroup MMA on this GPU: skipping");
    return;
  }
  Gemm sums = coalesce::testing::bf16_scheduled(tiling(TileStores::SumsThroughShared));
  Gemm direct = coalesce::testing::bf16_scheduled(tiling(TileStores::Direct));
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{200, 136, 72}, {130, 132, 192}}) {
    CAPTURE(M);
    CAPTURE(N);
    GemmData data = make_data(M, N, K, 7, BFloat(16));
    Buffer a({M, N}, BFloat(16)), b({M, N}, BFloat(16));
    a.poison();
    b.poison();
    Pipeline(sums.out).realize_on_gpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), a);
    Pipeline(direct.out).realize_on_gpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), b);
    CHECK(same_bits(a, b));
    CHECK(relative_error(a, reference(data, M, N, K, Epilogue::BiasGelu)) < 4e-3);
  }
}
