// An FFMA reduction whose last, partial k step adds only zeros runs that
// step in the one loop, unguarded (scheduler/ReductionTailAddsZero.h): the
// update is self + a product of inputs staged with zero_fill, each read at
// k where it ends as the reduction does. Anything else keeps the peeled,
// guarded step: an input staged without zero_fill, one that runs past the
// reduction's end, a factor that is not such an input, a split_k slice
// (which ends before the input). Each checked on the CPU at ragged shapes
// and the K = 1 / K = 3 pair against the naive reference.

#include "dsl/recipes/GemmSchedule.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "scheduler/LoweredFunc.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;
using coalesce::testing::occurrences;

namespace {

const std::vector<std::array<int, 3>> kShapes = {{37, 45, 29}, {5, 7, 1}, {5, 7, 3}, {32, 32, 16}, {33, 31, 17}};

// A small tiling of the FFMA recipe, so the CPU runs it quickly.
GemmTiling small_tiling(int stages, bool async_copy) {
  GemmTiling t;
  t.block_m = t.block_n = 32;
  t.threads_m = t.threads_n = 8;
  t.k_step = 8;
  t.stages = stages;
  t.async_copy = async_copy;
  t.zero_fill = true;
  return t;
}

// The k loops of the update: one where the tail runs in the loop, two where
// it is peeled.
int k_loops(const std::string &nest) { return occurrences(nest, "for ko in "); }

// `pipeline` against the naive reference of `epilogue` at every shape.
void check_numerics(Pipeline &pipeline, Type in, Epilogue epilogue = Epilogue::BiasGelu) {
  for (auto [M, N, K] : kShapes) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    GemmData data = make_data(M, N, K, 5, in);
    Buffer out({M, N});
    out.poison();
    pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, epilogue), out);
    CHECK(relative_error(out, reference(data, M, N, K, epilogue)) < 1e-5);
  }
}

} // namespace

TEST_CASE("the FFMA recipe's zero-filled asynchronous copies run a ragged K's last step in the one loop, unguarded") {
  // GemmTiling::zero_fill asks for them; its copies through registers keep
  // clamping (a test per element of every step would cost them a select
  // each), so their last step stays peeled. Either way the result is the
  // reference's.
  for (auto [stages, async_copy] : std::vector<std::pair<int, bool>>{{1, false}, {2, false}, {2, true}, {3, true}}) {
    for (Type in : {Float(32), Float(16)}) {
      CAPTURE(stages);
      CAPTURE(async_copy);
      CAPTURE(in);
      Gemm g = make_gemm(Epilogue::BiasGelu, in, Float(32));
      schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, small_tiling(stages, async_copy));
      Pipeline pipeline(g.out);
      std::string nest = pipeline.loop_nest();
      INFO(nest);
      CHECK(k_loops(nest) == (async_copy ? 1 : 2));
      if (async_copy)
        CHECK(occurrences(nest, "k < K") == 0);
      check_numerics(pipeline, in);
    }
  }
}

TEST_CASE("zero-filled FFMA copies test their elements only in the tiles at the input's ends") {
  // Every copy of the next tile is in two forms behind a test of the whole
  // tile: untested inside the input, tested where the tile reaches an end.
  Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32));
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, small_tiling(2, true));
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  INFO(nest);
  CHECK(occurrences(nest, "ko*8 + 16 <= K") >= 2); // A's and B's next tiles
  CHECK(occurrences(nest, "A_shared[(ko + 1) % 2, ") == 2);
  check_numerics(pipeline, Float(32));
}

TEST_CASE("a ragged K's last step stays peeled and guarded where a factor could be nonzero past the end") {
  SUBCASE("an input staged without zero_fill reads its clamped edge past the end") {
    Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32));
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    RVar ko("ko"), ki("ki");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 32, 32).gpu_blocks({bi, bj});
    g.out.register_block(ii, jj, ti, tj, ri, rj, 4, 4).gpu_threads({ti, tj});
    g.out.fuse_epilogue(g.acc, bj);
    g.acc.update().split(g.k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj});
    g.acc.update()
        .stage_in_shared(g.A, ko, SharedLayout{}, AsyncCopies{2, true})
        .stage_in_shared(g.B, ko, SharedLayout{}, AsyncCopies{2, false});
    Pipeline pipeline(g.out);
    std::string nest = pipeline.loop_nest();
    INFO(nest);
    CHECK(k_loops(nest) == 2);
    check_numerics(pipeline, Float(32));
  }
  SUBCASE("split_k: each slice ends before the input does") {
    Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32));
    GemmTiling t = small_tiling(2, true);
    t.split_k = 3;
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline pipeline(g.out);
    std::string nest = pipeline.loop_nest();
    INFO(nest);
    CHECK(k_loops(nest) == 2);
    check_numerics(pipeline, Float(32));
  }
}

TEST_CASE("an input wider than the reduction keeps the guard: its columns past K are not zeros") {
  // A has K + 8 columns, the reduction runs over [0, K): the last step's
  // overhang reads A's real columns K .. K + 7, which must not be added.
  Param M("M"), N("N"), K("K");
  Input A("A", Float(32), {Expr(M), Expr(K) + 8}), B("B", Float(32), {Expr(K) + 8, Expr(N)});
  Input bias("bias", Float(32), {Expr(N)});
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = gelu(acc(i, j) + bias(j));
  schedule_gemm(out, acc, A, B, i, j, k, small_tiling(2, true));
  Pipeline pipeline(out);
  std::string nest = pipeline.loop_nest();
  INFO(nest);
  CHECK(k_loops(nest) == 2);
  for (auto [m, n, kk] : kShapes) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(kk);
    Buffer a({m, kk + 8}), b({kk + 8, n}), bias_values({n}), result({m, n});
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < kk + 8; ++c)
        a.set(r, c, c < kk ? 0.01f * static_cast<float>((r * 7 + c * 3) % 11) : 100.0f);
    for (int r = 0; r < kk + 8; ++r)
      for (int c = 0; c < n; ++c)
        b.set(r, c, r < kk ? 0.01f * static_cast<float>((r * 5 + c) % 13) : 100.0f);
    for (int c = 0; c < n; ++c)
      bias_values.set(static_cast<size_t>(c), 0.1f * static_cast<float>(c % 5));
    result.poison();
    pipeline.realize_on_cpu(Arguments{{"A", a}, {"B", b}, {"bias", bias_values}, {"M", m}, {"N", n}, {"K", kk}},
                            result);
    double worst = 0;
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c) {
        double sum = 0;
        for (int q = 0; q < kk; ++q)
          sum += static_cast<double>(a.at(r, q)) * static_cast<double>(b.at(q, c));
        double x = sum + bias_values.get(static_cast<size_t>(c));
        double expected = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        worst = std::max(worst, std::abs(result.at(r, c) - expected) / (1.0 + std::abs(expected)));
      }
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("a factor that is not a zero-filled input read at k keeps the guard") {
  // acc += A(i, k) * B(k, j) * bias(j): a bias of Inf would make 0 * Inf a
  // NaN past the end.
  Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32));
  Func acc("acc2"), out("out2");
  acc(g.i, g.j) = 0.0f;
  acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j) * g.bias(g.j);
  out(g.i, g.j) = gelu(acc(g.i, g.j));
  schedule_gemm(out, acc, g.A, g.B, g.i, g.j, g.k, small_tiling(2, true));
  Pipeline pipeline(out);
  std::string nest = pipeline.loop_nest();
  INFO(nest);
  CHECK(k_loops(nest) == 2);
}

TEST_CASE("a running difference (self - x * y) of zero-filled tiles runs its last step in the one loop too") {
  Gemm g = make_gemm(Epilogue::None, Float(32), Float(32));
  Func acc("neg"), out("out3");
  acc(g.i, g.j) = 0.0f;
  acc(g.i, g.j) = acc(g.i, g.j) - g.A(g.i, g.k) * g.B(g.k, g.j);
  out(g.i, g.j) = 0.0f - acc(g.i, g.j);
  schedule_gemm(out, acc, g.A, g.B, g.i, g.j, g.k, small_tiling(2, true));
  Pipeline pipeline(out);
  std::string nest = pipeline.loop_nest();
  INFO(nest);
  CHECK(k_loops(nest) == 1);
  check_numerics(pipeline, Float(32), Epilogue::None);
}

TEST_CASE(
    "the recipe's default keeps its peeled step; zero-filled FFMA copies are refused on the GPU until checked there") {
  Gemm plain = make_gemm(Epilogue::BiasGelu);
  GemmTiling t = small_tiling(2, true);
  t.zero_fill = false;
  schedule_gemm(plain.out, plain.acc, plain.A, plain.B, plain.i, plain.j, plain.k, t);
  Pipeline plain_pipeline(plain.out);
  CHECK(k_loops(plain_pipeline.loop_nest()) == 2);
  CHECK(plain_pipeline.gpu_program().unverified_on_gpu.empty());

  Gemm filled = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(filled.out, filled.acc, filled.A, filled.B, filled.i, filled.j, filled.k, small_tiling(2, true));
  Pipeline filled_pipeline(filled.out);
  const std::vector<std::string> &unverified = filled_pipeline.gpu_program().unverified_on_gpu;
  REQUIRE(unverified.size() == 1);
  CHECK(unverified.front().find("AsyncCopies::zero_fill") != std::string::npos);
  // The CPU runs it, as every schedule.
  check_numerics(filled_pipeline, Float(32));
}
