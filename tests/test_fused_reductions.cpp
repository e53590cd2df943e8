// fuse_reduction_with (scheduler/FuseReductionNests.h): a SwiGLU MLP's two
// reductions, g = A Wg^T and u = A Wu^T, in one loop nest, and the epilogue
// silu(g) * u once after both. The nest (one k loop, marked as both
// reductions'), the numbers against a double reference at a ragged shape and
// K = 0 / 1 / 3, and the refusals, naming both Funcs: loops that differ (a
// split of one only, or by another factor), Funcs not computed together,
// the Func itself, one on FFMA and one on tensor cores; staged inputs: one
// copy of A for both sums, in each pipeline, and inputs staged unlike at the
// shared loop refused; on tensor cores (warp and warpgroup MMA), one tile of
// x feeding one instruction per sum, through ptxas.

#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "examples/SwiGlu.h"
#include "runtime/Coalesce.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

using namespace coalesce;
using coalesce::testing::occurrences;
using coalesce::testing::user_error_of;

namespace {

// The library's fused tiling (two 64 x 128 warpgroups on a 128 x 128 tile:
// both sums' accumulators, 128 per thread, fit beside the kernel), as
// coalesce-aot's --epilogue=swiglu takes it.
MmaTiling fused_wgmma_tiling() { return default_fused_gemms_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 132); }

// One GEMM with the same tiling, for its instruction count.
examples::Gemm single_gemm(const MmaTiling &t) {
  return coalesce::testing::mma_scheduled(t, examples::Epilogue::None, BFloat(16), BFloat(16));
}

struct SwiGlu {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, Wg{"Wg", Float(32), {N, K}}, Wu{"Wu", Float(32), {N, K}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func g{"g"}, u{"u"}, out{"out"};
  SwiGlu() {
    g(i, j) = 0.0f;
    g(i, j) += A(i, k) * Wg(j, k);
    u(i, j) = 0.0f;
    u(i, j) += A(i, k) * Wu(j, k);
    out(i, j) = silu(g(i, j)) * u(i, j);
    out.tile(i, j, bi, bj, ii, jj, 32, 32)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(g, bj);
    out.fuse_epilogue(u, bj);
  }
  // The same k loop split and ordered for both updates.
  void split_both(int factor) {
    for (Func *f : {&g, &u})
      f->update().split(k, ko, ki, factor).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
  }
};

double error(SwiGlu &s, int M, int N, int K) {
  Buffer A({M, K}), Wg({N, K}), Wu({N, K}), out({M, N});
  A.fill_random(1);
  Wg.fill_random(2);
  Wu.fill_random(3);
  out.poison();
  Pipeline(s.out).realize_on_cpu({{"A", A}, {"Wg", Wg}, {"Wu", Wu}, {"M", M}, {"N", N}, {"K", K}}, out);
  double error = 0, norm = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double g = 0, u = 0;
      for (int x = 0; x < K; ++x) {
        g += static_cast<double>(A.get(static_cast<size_t>(r) * K + x)) * Wg.get(static_cast<size_t>(c) * K + x);
        u += static_cast<double>(A.get(static_cast<size_t>(r) * K + x)) * Wu.get(static_cast<size_t>(c) * K + x);
      }
      double expected = g / (1.0 + std::exp(-g)) * u, got = out.get(static_cast<size_t>(r) * N + c);
      error += (got - expected) * (got - expected);
      norm += expected * expected;
    }
  return std::sqrt(error / std::max(norm, 1e-30));
}

} // namespace

TEST_CASE("two reductions fused into one nest: one k loop runs both, the epilogue after it") {
  SwiGlu s;
  s.split_both(8);
  s.u.fuse_reduction_with(s.g);
  std::string nest = Pipeline(s.out).loop_nest();
  // ko and ki, in the full k steps and in the partial last one.
  CHECK(occurrences(nest, "# reduction of g and u") == 4);
  CHECK(occurrences(nest, "# reduction of u") == 0);
  // In the innermost body, u's update right after g's.
  CHECK(nest.find("g[ti, tj, ri, rj] = g[ti, tj, ri, rj] + ") < nest.find("u[ti, tj, ri, rj] = u[ti, tj, ri, rj] + "));
  CHECK(nest.find("u[ti, tj, ri, rj] = 0.0f") < nest.find("# reduction of g and u"));
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{67, 45, 37}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CHECK(error(s, M, N, K) < 1e-5);
  }
}

TEST_CASE("the fusion may be named from either Func, with loops unsplit") {
  SwiGlu s;
  s.g.fuse_reduction_with(s.u);
  CHECK(occurrences(Pipeline(s.out).loop_nest(), "# reduction of g and u") == 1);
  CHECK(error(s, 35, 33, 5) < 1e-5);
}

TEST_CASE("fused reductions staged in shared memory: A copied once for both sums, in every pipeline") {
  std::vector<std::pair<const char *, TileCopies>> pipelines = {
      {"one buffer", OneBuffer{}}, {"registers", RegisterDoubleBuffer{true}}, {"cp.async", AsyncCopies{3, true}}};
  for (const auto &[name, copies] : pipelines) {
    CAPTURE(name);
    SwiGlu s;
    s.split_both(8);
    s.g.update().stage_in_shared(s.A, s.ko, SharedLayout{}, copies).stage_in_shared(s.Wg, s.ko, SharedLayout{}, copies);
    s.u.update().stage_in_shared(s.A, s.ko, SharedLayout{}, copies).stage_in_shared(s.Wu, s.ko, SharedLayout{}, copies);
    s.u.fuse_reduction_with(s.g);
    std::string nest = Pipeline(s.out).loop_nest();
    INFO(nest);
    // One shared tile per input, A's read by both updates.
    CHECK(occurrences(nest, "allocate A_shared") == 1);
    CHECK(occurrences(nest, "allocate Wg_shared") == 1);
    CHECK(occurrences(nest, "allocate Wu_shared") == 1);
    CHECK(occurrences(nest, "A(") == 0);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{70, 75, 37}, {35, 33, 0}, {35, 33, 1}, {35, 33, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error(s, M, N, K) < 1e-5);
    }
  }
}

TEST_CASE("fused reductions are refused, naming both Funcs, where the result or the loops would differ") {
  {
    SwiGlu s; // a split of one update only
    s.g.update().split(s.k, s.ko, s.ki, 8);
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }), "the update loops of 'g' and 'u' differ at loop");
  }
  {
    SwiGlu s; // different split factors
    s.g.update().split(s.k, s.ko, s.ki, 8);
    s.u.update().split(s.k, s.ko, s.ki, 4);
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }), "differ at loop 'ko'");
  }
  {
    // g computed at root, u at out's tile: not one site.
    SwiGlu s;
    s.g.compute_root();
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }),
              "'g' and 'u' must be computed at the same loop of one consumer");
  }
  {
    SwiGlu s; // one copy of A serves both sums: staged alike
    s.split_both(8);
    s.g.update().stage_in_shared(s.A, s.ko, SharedLayout{true, 1});
    s.u.update().stage_in_shared(s.A, s.ko);
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }),
              "in schedule for 'u' (update 0): 'A' is staged at 'ko', where 'g' (update 0), whose reduction runs "
              "in the same fused nest, stages it too, with another layout or pipeline");
  }
  {
    SwiGlu s; // one loop, one pipeline
    s.split_both(8);
    s.g.update().stage_in_shared(s.A, s.ko, SharedLayout{}, AsyncCopies{3});
    s.u.update().stage_in_shared(s.Wu, s.ko);
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.out).loop_nest(); }),
              "'Wu' is staged at 'ko' with one buffer (OneBuffer), but 'g' (update 0), whose reduction runs in the "
              "same fused nest, stages 'A' there with 3 stages of cp.async copies (AsyncCopies)");
  }
  {
    SwiGlu s;
    CHECK_HAS(user_error_of([&] { s.u.fuse_reduction_with(s.u); }), "names the Func itself");
  }
  {
    examples::SwiGlu s(BFloat(16), BFloat(16)); // g on tensor cores, u on FFMA
    schedule_gemm_mma(s.y, s.g, s.x, s.Wg, s.i, s.j, s.k, fused_wgmma_tiling());
    s.y.fuse_epilogue(s.u, Var("bj"));
    s.u.fuse_reduction_with(s.g);
    CHECK_HAS(user_error_of([&] { Pipeline(s.y).loop_nest(); }),
              "fuse_reduction_with('g'): 'u' runs on FFMA but 'g' onto bf16 wgmma; fused reductions share their loops, "
              "so map both onto the same instruction (mma) or neither");
  }
}

TEST_CASE("fused reductions compile for GPUs, on FFMA and on tensor cores") {
  SwiGlu s; // both run on the H200 by coalesce-gpu-check (SwiGluCheck)
  s.split_both(8);
  s.u.fuse_reduction_with(s.g);
  CHECK(occurrences(Pipeline(s.out).ptx(), "fma.rn.f32") > 0);

  examples::SwiGlu mma(BFloat(16), BFloat(16));
  mma.schedule_mma(fused_wgmma_tiling());
  // Two instructions per k16 of a step: one per sum.
  CHECK(occurrences(Pipeline(mma.y).ptx(parse_gpu_target("sm_90a")), "wgmma.mma_async.sync.aligned.m64n128k16") ==
        2 * occurrences(Pipeline(single_gemm(fused_wgmma_tiling()).out).ptx(parse_gpu_target("sm_90a")),
                        "wgmma.mma_async.sync.aligned.m64n128k16"));
}

TEST_CASE("fused reductions on tensor cores: one tile of x feeds both sums' instructions") {
  struct Form {
    const char *name;
    MmaTiling tiling;
    const char *instruction; // in the printed nest
  };
  MmaTiling warp = default_fused_gemms_tiling(MmaKind::BF16_m16n8k16, 4096, 4096, 132);
  for (const Form &form :
       {Form{"warp MMA", warp, "warp_mma"}, Form{"warpgroup MMA, TMA", fused_wgmma_tiling(), "warpgroup_mma"}}) {
    const std::string name = form.name;
    INFO(name);
    examples::SwiGlu s(BFloat(16), BFloat(16));
    s.schedule_mma(form.tiling);
    Pipeline pipeline(s.y);
    std::string nest = pipeline.loop_nest();
    INFO(nest);
    CHECK(occurrences(nest, "allocate x_shared") == 1);
    CHECK(occurrences(nest, "allocate Wg_shared") == 1);
    CHECK(occurrences(nest, "allocate Wu_shared") == 1);
    // Each instruction of the unfused GEMM's nest, twice: once per sum.
    examples::Gemm one = single_gemm(form.tiling);
    CHECK(occurrences(nest, form.instruction) == 2 * occurrences(Pipeline(one.out).loop_nest(), form.instruction));
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{
             {131, 136, 272}, {67, 64, 64}, {70, 75, 37}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(examples::swiglu_error(BFloat(16), BFloat(16), M, N, K,
                                   [&](const Arguments &args, Buffer &y) { pipeline.realize_on_cpu(args, y); }) < 4e-3);
    }
    PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
    REQUIRE(!assembled.kernels.empty());
    const std::string report = name + ": " + std::to_string(assembled.kernels.front().registers) + " registers" +
                               (assembled.kernels.front().spills() ? ", spills" : "");
    MESSAGE(report);
    // The warpgroup tile keeps 128 accumulators per thread; the warp
    // MMA's 64 x 64 warp tiles too, at the register limit.
    if (name != "warp MMA")
      CHECK(assembled.kernels.front().spills() == 0);
  }
}
