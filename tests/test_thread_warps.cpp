// gpu_thread_warps (threads arranged in warps of a chosen shape) and the
// FFMA GEMM schedule's knobs that reach it and the staging depth
// (GemmTiling::warp_rows/warp_cols and stages): the loops they print, the
// numbers they compute on the CPU against the reference (ragged shapes, the
// K = 1 / K = 3 pair), and one test per illegal use.

#include "examples/Reference.h"
#include "dsl/recipes/GemmSchedule.h"

#include <doctest/doctest.h>

#include "ErrorCapture.h"

using namespace coalesce;
using namespace coalesce::examples;
using testing::user_error_of;

namespace {

constexpr double kTolerance = 1e-5;

// out's 64 x 32 block tile, 4 x 4 per thread: 16 x 8 threads, ti outside tj,
// not yet mapped to GPU threads.
struct Tiled {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  Var bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"}, warp{"warp"}, lane{"lane"};
  Tiled() {
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 32).gpu_blocks({bi, bj});
    g.out.split(ii, ti, ri, 4).split(jj, tj, rj, 4).reorder({ti, tj, ri, rj}).unroll(ri).unroll(rj);
  }
  // acc on out's register tile, K staged 8 at a time in 3 stages.
  void finish(const std::vector<VarOrRVar> &threads) {
    g.out.fuse_epilogue(g.acc, bj);
    RVar ko("ko"), ki("ki");
    AsyncCopies copies;
    copies.stages = 3;
    g.acc.update()
        .split(g.k, ko, ki, 8)
        .reorder({ko, threads[0], threads[1], ki, ri, rj})
        .unroll(ki)
        .stage_in_shared(g.A, ko, {}, copies)
        .stage_in_shared(g.B, ko, {}, copies);
  }
};

void check_against_reference(const Func &out, Epilogue e) {
  Pipeline pipeline(out);
  auto run = [&](const GemmData &data, int M, int N, int K) {
    Buffer result({M, N});
    result.poison();
    pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, e), result);
    return result;
  };
  struct Shape {
    int M, N, K;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{127, 45, 131}, Shape{70, 33, 9}}) {
    INFO("shape ", s.M, "x", s.N, "x", s.K);
    GemmData data = make_data(s.M, s.N, s.K, 11);
    Buffer result = run(data, s.M, s.N, s.K);
    CHECK(count_nan(result) == 0);
    CHECK(relative_error(result, reference(data, s.M, s.N, s.K, e)) < kTolerance);
  }
  for (int K : {1, 3}) {
    INFO("K = ", K);
    GemmData data = make_data(67, 45, K, 5);
    CHECK(relative_error(run(data, 67, 45, K), unfused_chain(data, 67, 45, K, e)) < kTolerance);
  }
}

} // namespace

TEST_CASE("gpu_thread_warps prints its warp and lane loops and computes what gpu_threads computes") {
  for (int warp_rows : {4, 8, 16}) { // 16 x 8 threads: 8 columns at most
    CAPTURE(warp_rows);
    Tiled t;
    t.g.out.gpu_thread_warps(t.ti, t.tj, warp_rows, 32 / warp_rows, t.warp, t.lane);
    t.finish({t.warp, t.lane});
    std::string nest = Pipeline(t.g.out).loop_nest();
    INFO(nest);
    CHECK_HAS(nest, "for warp in gpu_thread.y(0, 4)");
    CHECK_HAS(nest, "for lane in gpu_thread.x(0, 32)");
    check_against_reference(t.g.out, Epilogue::BiasGelu);
  }
}

TEST_CASE("gpu_thread_warps rejects a warp shape that is not a bijection of the block's threads") {
  Tiled t;
  std::string size = user_error_of([&] { t.g.out.gpu_thread_warps(t.ti, t.tj, 4, 4, t.warp, t.lane); });
  CHECK_HAS(size, "in schedule for 'out'");
  CHECK_HAS(size, "a warp of 4x4 threads; a warp has 32 threads");
  std::string zero = user_error_of([&] { t.g.out.gpu_thread_warps(t.ti, t.tj, 0, 32, t.warp, t.lane); });
  CHECK_HAS(zero, "a warp of 0x32 threads");
  // 16 x 8 threads: 2 x 16 warps would need 16 columns.
  std::string tiling = user_error_of([&] { t.g.out.gpu_thread_warps(t.ti, t.tj, 2, 16, t.warp, t.lane); });
  CHECK_HAS(tiling, "warps of 2x16 threads do not tile the 16x8 threads of the block");
  CHECK_HAS(tiling, "whose columns divide 8");
  // Nothing was recorded: the plain mapping still works afterwards.
  t.g.out.gpu_threads({t.ti, t.tj});
  t.finish({t.ti, t.tj});
  CHECK_NOTHROW(Pipeline(t.g.out).loop_nest());
}

TEST_CASE("gpu_thread_warps rejects loops out of order, of unknown extent, or already mapped") {
  Tiled t;
  std::string order = user_error_of([&] { t.g.out.gpu_thread_warps(t.tj, t.ti, 4, 8, t.warp, t.lane); });
  CHECK_HAS(order, "'tj' must be the loop directly outside 'ti'");
  std::string extent = user_error_of([&] { t.g.out.gpu_thread_warps(t.bi, t.bj, 4, 8, t.warp, t.lane); });
  CHECK_HAS(extent, "needs both loops to come from splits by constants");
  std::string names = user_error_of([&] { t.g.out.gpu_thread_warps(t.ti, t.tj, 4, 8, t.ri, t.lane); });
  CHECK_HAS(names, "gpu_thread_warps reuses the name 'ri'");
  t.g.out.gpu_threads({t.ti, t.tj});
  std::string mapped = user_error_of([&] { t.g.out.gpu_thread_warps(t.ti, t.tj, 4, 8, t.warp, t.lane); });
  CHECK_HAS(mapped, "'ti' is already mapped; leave thread mapping to gpu_thread_warps");
}

TEST_CASE("the FFMA GEMM tiling: stage counts and warp layouts it refuses, with the tiling named") {
  auto error_of = [](GemmTiling tiling) {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    return user_error_of([&] { schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling); });
  };
  for (int stages : {0, 9}) {
    GemmTiling t;
    t.stages = stages;
    std::string message = error_of(t);
    CHECK_HAS(message, "GEMM tiling 128x128 tile");
    CHECK_HAS(message, "the staging has 1 to 8");
  }
  GemmTiling through_registers;
  through_registers.stages = 3;
  through_registers.async_copy = false;
  CHECK_HAS(error_of(through_registers), "3 stages without async_copy; only asynchronous copies");
  GemmTiling half_layout;
  half_layout.warp_rows = 4;
  CHECK_HAS(error_of(half_layout), "give both warp_rows and warp_cols");
  GemmTiling narrow = default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count()); // 8 x 8 threads
  REQUIRE(narrow.threads_n == 8);
  narrow.warp_rows = 2;
  narrow.warp_cols = 16;
  CHECK_HAS(error_of(narrow), "warps of 2x16 threads do not tile the 8x8 threads");
}

TEST_CASE("the FFMA GEMM tiling's warp layout and stages print in the loop nest") {
  GemmTiling t = default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count());
  t.warp_rows = 4;
  t.warp_cols = 8;
  t.stages = 3;
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  CHECK(t.str().find("3 stages, warps of 4x8 threads") != std::string::npos);
  std::string nest = Pipeline(g.out).loop_nest();
  INFO(nest);
  CHECK_HAS(nest, "for warp in gpu_thread.y(0, 8)");
  CHECK_HAS(nest, "for lane in gpu_thread.x(0, 32)");
  CHECK_HAS(nest, "A_shared[3]");
}
