// partition_full_tiles: the epilogue's copy without bounds guards for
// blocks whose whole tile is inside. The hoisted condition in the nest
// (exact: one row or column more and a ragged block would store past the
// output), numerics at shapes whose last tile is short by one row or
// column, K = 1 / K = 3, the schedule switch, and the pass on hand-built
// statements: what it proves from, and what it leaves alone.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "scheduler/PartitionFullTiles.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// A 64 x 64 FFMA tiling (16 x 16 threads of 4 x 4): small register blocks
// keep the partition (GemmSchedule.cpp).
GemmTiling small_tiling() {
  GemmTiling t;
  t.block_m = t.block_n = 64;
  return t;
}

Gemm ffma_scheduled(const GemmTiling &t, Epilogue e = Epilogue::BiasGelu) {
  Gemm g = make_gemm(e);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

double ffma_error(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  GemmData data = make_data(M, N, K, 11);
  return coalesce::testing::cpu_error_against_reference(pipeline, data, M, N, K, e, Float(32));
}

Expr var(const char *name) { return Variable::make(Int(32), name); }

Stmt store_at(const Expr &i) { return Store::make("out", {i}, make_const(Float(32), 1.0)); }

Stmt threads(const char *name, int extent, Stmt body) {
  return For::make(name, 0, extent, ForKind::GpuThread, std::move(body), 0);
}

} // namespace

TEST_CASE("the epilogue's unguarded copy is taken exactly when the whole tile is inside") {
  Gemm g = ffma_scheduled(small_tiling());
  std::string nest = Pipeline(g.out).loop_nest();
  // The worst row and column of the 64 x 64 tile: 63 past its first.
  CHECK_HAS(nest, "if bi*64 + 63 < M && bj*64 + 63 < N:");
  CHECK_HAS(nest, "else:");

  // With direct stores (the default stages the full-tile copy's statements
  // for every block instead: test_tile_stores).
  Gemm direct = coalesce::testing::bf16_scheduled(
      default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, GpuTarget().sm_count()));
  direct.out.gpu_tile_stores(TileStores::Direct);
  CHECK_HAS(Pipeline(direct.out).loop_nest(), "if bi*128 + 127 < M && bj*256 + 255 < N:");
}

TEST_CASE("GEMMs + bias + GELU match the reference where the last tile is one short, one over, or whole") {
  Gemm g = ffma_scheduled(small_tiling());
  Pipeline pipeline(g.out);
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{
           {127, 128, 40}, {128, 127, 40}, {129, 65, 33}, {128, 128, 17}, {63, 64, 5}, {64, 63, 5}, {1, 1, 1}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CHECK(ffma_error(pipeline, M, N, K) < 1e-5);
  }
  Gemm w = coalesce::testing::bf16_scheduled(coalesce::testing::one_tile_tma_tiling(MmaKind::BF16_wgmma_m64k16, 3));
  Pipeline wgmma(w.out);
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{63, 64, 64}, {64, 63, 72}, {128, 64, 131}, {65, 129, 64}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CHECK(coalesce::testing::bf16_error_against_reference(wgmma, M, N, K, Epilogue::BiasGelu, 5) < 4e-3);
  }
}

TEST_CASE("with the unguarded copy, the fused epilogue still runs once, after the whole reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = ffma_scheduled(small_tiling(), e);
    Pipeline pipeline(g.out);
    for (auto [M, N] : std::vector<std::array<int, 2>>{{128, 64}, {70, 45}})
      for (int K : {1, 3}) {
        CAPTURE(M);
        CAPTURE(K);
        CHECK(ffma_error(pipeline, M, N, K, e) < 1e-5);
      }
  }
}

TEST_CASE("partition_full_tiles(false) keeps one guarded copy, and the result") {
  Gemm g = ffma_scheduled(small_tiling());
  g.out.partition_full_tiles(false);
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  CHECK(nest.find("63 < M &&") == std::string::npos);
  CHECK_HAS(nest, "if i < M:");
  CHECK(ffma_error(pipeline, 127, 65, 9) < 1e-5);
  // Only the output's statements are partitioned; on another Func it is an error.
  Gemm h = ffma_scheduled(small_tiling());
  h.acc.partition_full_tiles(false);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(h.out).loop_nest(); }),
            "partition_full_tiles applies to the output's statements; 'acc' is not the output (call it on 'out')");
  // The 128 x 128 default (8 x 8 per thread, at its register cap) turns it off.
  Gemm big = ffma_scheduled(default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
  CHECK(Pipeline(big.out).loop_nest().find("127 < M &&") == std::string::npos);
}

TEST_CASE("the hoisted bound takes each guard's worst case over the statement's loops and lets") {
  // for t in [0, 8): let x = b*8 + t % 3 - t/4;  if x < M: store;  if 0 <= x: store
  Expr t = var("t"), b = var("b");
  Stmt body = LetStmt::make("x", b * 8 + t % 3 - t / 4,
                            Block::make({IfThenElse::make(var("x") < var("M"), store_at(var("x"))),
                                         IfThenElse::make(0 <= var("x"), store_at(var("x") + 1))}));
  std::string out = to_string(partition_full_tiles(threads("t", 8, body)));
  // x <= b*8 + 2 (t % 3 <= 2, t/4 >= 0); x >= b*8 - 1 (t/4 <= 1).
  CHECK_HAS(out, "b*8 + 2 < M");
  CHECK_HAS(out, "0 <= b*8 - 1");
  CHECK_HAS(out, "else:");
}

TEST_CASE("guards the pass cannot bound, or statements it must not copy, are left alone") {
  Expr t = var("t"), b = var("b");
  auto unchanged = [](const Stmt &s) { return to_string(partition_full_tiles(s)) == to_string(s); };
  // An equality (one thread's work), not a bound.
  CHECK(unchanged(threads("t", 8, IfThenElse::make(t == 0, store_at(b)))));
  // A guard through something not affine (a min of a thread index).
  CHECK(unchanged(threads("t", 8, IfThenElse::make(Min::make(t, b) < var("M"), store_at(t)))));
  // A loop of non-constant extent inside.
  CHECK(unchanged(threads("t", 8, For::make("e", 0, var("n"), ForKind::Serial,
                                            IfThenElse::make(b + t < var("M"), store_at(t)), -1))));
  // Inside a serial loop (a k step's guard): copying would double the loop body.
  CHECK(unchanged(For::make("ko", 0, var("n"), ForKind::Serial,
                            threads("t", 8, IfThenElse::make(var("ko") * 8 + t < var("K"), store_at(t))), -1)));
  // A name bound elsewhere in the statement means another variable outside
  // it: y in the guard is not the let's y.
  Stmt shadow = threads("t", 8, Block::make({LetStmt::make("y", t, store_at(var("y"))),
                                            IfThenElse::make(var("y") + t < var("M"), store_at(t))}));
  CHECK(unchanged(shadow));
  // A barrier inside: not per-element code.
  CHECK(unchanged(threads("t", 8, Block::make({Barrier::make(), IfThenElse::make(b + t < var("M"), store_at(t))}))));
}
