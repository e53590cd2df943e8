// One test per illegal schedule or algorithm: each builds a small pipeline,
// expects a UserError, and checks that the message names the Func, the loop
// or variable, and the rule. An InternalError, or no error at all, fails.
// Here: epilogues and reductions, loop names, the GPU mapping; placement,
// algorithms and the IR verifier are in test_legality_placement.cpp.

#include <doctest/doctest.h>

#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "dsl/IRPrinter.h"
#include "runtime/Pipeline.h"
#include "scheduler/Environment.h"
#include "scheduler/Lower.h"
#include "scheduler/VerifyEpiloguePlacement.h"

#include <cmath>
#include <string>

#include "ErrorCapture.h"
#include "LegalityGemm.h"

using namespace coalesce;
using coalesce::testing::Gemm;
using coalesce::testing::lower;
using coalesce::testing::user_error_of;

// ------------------------------------------------- epilogues and reductions

TEST_CASE("an epilogue computed inside its producer's reduction loop is rejected") {
  Gemm g;
  g.acc.update().split(g.k, g.ko, g.ki, 8);
  std::string message = user_error_of([&] { g.out.compute_at(g.acc, g.ko); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "reduction loop 'ko' of 'acc'");
  CHECK_HAS(message, "partial sums");
  CHECK_HAS(message, "an epilogue must run after the reduction");
}

TEST_CASE("an epilogue computed at the unsplit reduction loop is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.out.compute_at(g.acc, g.k); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "reduction loop 'k' of 'acc'");
  CHECK_HAS(message, "partial sums");
}

TEST_CASE("a producer computed at its own reduction loop, named as a loop of its consumer, is rejected") {
  // compute_at's site is a loop of the consumer; 'ko' belongs to acc itself.
  Gemm g;
  g.acc.update().split(g.k, g.ko, g.ki, 8);
  std::string message = user_error_of([&] { g.acc.compute_at(g.out, g.ko); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "loop 'ko'");
  CHECK_HAS(message, "not a loop of 'out'");
  CHECK_HAS(message, "its loops are: i, j");
}

TEST_CASE("fuse_epilogue at a reduction loop is rejected") {
  Gemm g;
  g.acc.update().split(g.k, g.ko, g.ki, 8);
  std::string message = user_error_of([&] { g.out.fuse_epilogue(g.acc, g.ko); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "'ko' is a reduction loop of 'acc'");
  CHECK_HAS(message, "partial sums");
  CHECK_HAS(message, "pass a loop of 'out'");
}

TEST_CASE("a producer computed inside its consumer's reduction loop is rejected") {
  Gemm g;
  Func scale("scale"), sum("sum");
  scale(g.i, g.j) = g.bias(g.j) * 2.0f;
  sum(g.i, g.j) = 0.0f;
  sum(g.i, g.j) += scale(g.i, g.j) * g.A(g.i, g.k) * g.B(g.k, g.j);
  std::string message = user_error_of([&] { scale.compute_at(sum, g.k); });
  CHECK_HAS(message, "in schedule for 'scale'");
  CHECK_HAS(message, "reduction loop 'k' of 'sum'");
  CHECK_HAS(message, "partial sums");
}

TEST_CASE("an epilogue folded into the reduction (relu of the running sum) is rejected at lowering") {
  Gemm g;
  Func acc("acc"), out("out");
  acc(g.i, g.j) = 0.0f;
  acc(g.i, g.j) = max(acc(g.i, g.j) + g.A(g.i, g.k) * g.B(g.k, g.j), 0.0f);
  out(g.i, g.j) = acc(g.i, g.j);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "update 0 of 'acc' is not a reduction");
  CHECK_HAS(message, "acc(i, j)");
  CHECK_HAS(message, "relu of a partial sum is not relu of the sum");
  CHECK_HAS(message, "separate Func");
}

TEST_CASE("a bias added on every reduction step is rejected") {
  Gemm g;
  Func acc("acc"), out("out");
  acc(g.i, g.j) = 0.0f;
  acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j) + g.bias(g.j);
  out(g.i, g.j) = acc(g.i, g.j);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "update 0 of 'acc'");
  CHECK_HAS(message, "adds bias(j)");
  CHECK_HAS(message, "reduction variable 'k'");
  CHECK_HAS(message, "added once per step");
  CHECK_HAS(message, "acc.update(0).allow_reduction_invariant_terms()");
}

TEST_CASE("a bias added on every reduction step is accepted when asked for, and added K times") {
  Gemm g;
  Func acc("acc"), out("out");
  acc(g.i, g.j) = 0.0f;
  acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j) + g.bias(g.j);
  out(g.i, g.j) = acc(g.i, g.j);
  acc.update().allow_reduction_invariant_terms();
  out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 2, 2);
  acc.compute_at(out, g.bj);
  const int m = 3, n = 5, kk = 5;
  Buffer a({m, kk}), b({kk, n}), c({n}), o({m, n});
  a.fill_random(1);
  b.fill_random(2);
  c.fill_random(3);
  o.poison();
  Pipeline p(out);
  p.realize_on_cpu({{"A", a}, {"B", b}, {"bias", c}, {"M", m}, {"N", n}, {"K", kk}}, o);
  for (int x = 0; x < m; ++x)
    for (int y = 0; y < n; ++y) {
      double sum = 0;
      for (int z = 0; z < kk; ++z)
        sum += double(a(x, z)) * b(z, y);
      CHECK(o(x, y) == doctest::Approx(sum + kk * double(c(y))).epsilon(1e-5));
      CHECK(o(x, y) != doctest::Approx(sum + double(c(y))).epsilon(1e-5)); // not once
    }
}

TEST_CASE("reordering the loops of a split reduction is rejected") {
  Gemm g;
  g.acc.update().split(g.k, g.ko, g.ki, 4).reorder({g.ki, g.ko});
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "reduction loop 'ki' is ordered outside 'ko'");
  CHECK_HAS(message, "changes the order in which the reduction is summed");
  CHECK_HAS(message, "acc.update(0).allow_reassociation()");
}

TEST_CASE("reordering the loops of a split reduction is accepted with allow_reassociation") {
  Gemm g;
  g.schedule_tiles();
  g.acc.update().split(g.k, g.ko, g.ki, 4).reorder({g.ki, g.ko}).allow_reassociation();
  std::string nest = to_string(lower_loop_nest(g.out));
  size_t ki = nest.find("for ki"), ko = nest.find("for ko");
  REQUIRE(ki != std::string::npos);
  REQUIRE(ko != std::string::npos);
  CHECK(ki < ko);
  // Numbers still agree, up to rounding, at a ragged K.
  const int m = 2, n = 3, kk = 7;
  Buffer a({m, kk}), b({kk, n}), c({n}), o({m, n});
  a.fill_random(4);
  b.fill_random(5);
  c.fill_random(6);
  o.poison();
  Pipeline(g.out).realize_on_cpu({{"A", a}, {"B", b}, {"bias", c}, {"M", m}, {"N", n}, {"K", kk}}, o);
  for (int x = 0; x < m; ++x)
    for (int y = 0; y < n; ++y) {
      double sum = c(y);
      for (int z = 0; z < kk; ++z)
        sum += double(a(x, z)) * b(z, y);
      CHECK(o(x, y) == doctest::Approx(std::max(sum, 0.0)).epsilon(1e-5));
    }
}

// ----------------------------------------------------------- loop names

TEST_CASE("split of an unknown loop is rejected") {
  Gemm g;
  Var z("z"), zo("zo"), zi("zi");
  std::string message = user_error_of([&] { g.out.split(z, zo, zi, 4); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "split of unknown loop 'z'");
  CHECK_HAS(message, "the loops of 'out' are: i, j");
}

TEST_CASE("reorder of an unknown loop is rejected") {
  Gemm g;
  Var z("z");
  std::string message = user_error_of([&] { g.out.reorder({g.j, z}); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "reorder of unknown loop 'z'");
  CHECK_HAS(message, "the loops of 'out' are: i, j");
}

TEST_CASE("unroll of an unknown loop is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.acc.update().unroll(g.ki); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "unroll of unknown loop 'ki'");
  CHECK_HAS(message, "are: i, j, k");
}

TEST_CASE("gpu_threads of an unknown loop is rejected") {
  Gemm g;
  g.out.split(g.i, g.bi, g.ti, 16);
  std::string message = user_error_of([&] { g.out.gpu_threads({g.tj}); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "gpu_threads of unknown loop 'tj'");
  CHECK_HAS(message, "are: bi, ti, j");
}

TEST_CASE("reorder naming one loop twice is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.out.reorder({g.j, g.j}); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "reorder names loop 'j' twice");
}

TEST_CASE("split reusing an existing name is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.out.split(g.i, g.j, g.ii, 4); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "split reuses the name 'j'");
  CHECK_HAS(message, "choose a new name");
}

TEST_CASE("split giving both new loops one name is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.out.split(g.i, g.ii, g.ii, 4); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "split of 'i' names both new loops 'ii'");
}

TEST_CASE("splitting an already split loop is rejected") {
  Gemm g;
  g.out.split(g.i, g.bi, g.ii, 16);
  Var a("a"), b("b");
  std::string message = user_error_of([&] { g.out.split(g.i, a, b, 4); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "split of 'i', which was already split into 'bi' and 'ii'");
  CHECK_HAS(message, "use one of those");
}

TEST_CASE("split by a factor that is not positive is rejected") {
  for (int factor : {0, -4}) {
    CAPTURE(factor);
    Gemm g;
    std::string message = user_error_of([&] { g.out.split(g.i, g.bi, g.ii, factor); });
    CHECK_HAS(message, "in schedule for 'out'");
    CHECK_HAS(message, "split of 'i' by " + std::to_string(factor));
    CHECK_HAS(message, "the factor must be positive");
  }
}

TEST_CASE("splitting a loop already mapped to the GPU is rejected") {
  Gemm g;
  g.out.gpu_blocks({g.i, g.j});
  std::string message = user_error_of([&] { g.out.split(g.j, g.bj, g.jj, 8); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "split of 'j', which is already marked gpu_block");
  CHECK_HAS(message, "split first");
}

// ------------------------------------------------------------ GPU mapping

TEST_CASE("gpu_blocks on a reduction loop is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.acc.update().gpu_blocks({g.k}); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "cannot map reduction loop 'k' to GPU blocks");
  CHECK_HAS(message, "only partial sums of 'acc'");
  CHECK_HAS(message, "split_k");
}

TEST_CASE("gpu_threads on a reduction loop is rejected") {
  Gemm g;
  g.acc.update().split(g.k, g.ko, g.ki, 8);
  std::string message = user_error_of([&] { g.acc.update().gpu_threads({g.ki}); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "cannot map reduction loop 'ki' to GPU threads");
  CHECK_HAS(message, "add into the same element");
}

TEST_CASE("gpu_threads with more than three loops is rejected") {
  Gemm g;
  g.out.split(g.i, g.bi, g.ii, 4).split(g.j, g.bj, g.jj, 4);
  std::string message = user_error_of([&] { g.out.gpu_threads({g.bi, g.bj, g.ii, g.jj}); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "gpu_threads takes one to three loops, got 4");
}

TEST_CASE("a block loop inside a thread loop is rejected") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ti, g.tj, 16, 16).gpu_blocks({g.bi, g.bj}).gpu_threads({g.ti, g.tj});
  g.out.reorder({g.ti, g.tj, g.bi, g.bj});
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "loop 'bi' is mapped to GPU blocks inside thread loop 'ti'");
  CHECK_HAS(message, "block loops must enclose thread loops");
}

TEST_CASE("two nested loops mapped to one GPU dimension are rejected") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ti, g.tj, 16, 16).gpu_threads({g.ti}).gpu_threads({g.tj});
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "loops 'ti' and 'tj' are both mapped to GPU thread dimension x");
  CHECK_HAS(message, "one gpu_blocks/gpu_threads call");
}

TEST_CASE("more than 1024 threads per block is rejected") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ti, g.tj, 64, 32).gpu_blocks({g.bi, g.bj}).gpu_threads({g.ti, g.tj});
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "the thread loops down to 'tj' make 2048 threads per block");
  CHECK_HAS(message, "more than the limit of 1024");
}

TEST_CASE("a thread loop of non-constant extent is rejected") {
  Gemm g;
  g.out.gpu_threads({g.i});
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "cannot make loop 'i' gpu_thread");
  CHECK_HAS(message, "M is not a constant");
}

TEST_CASE("a staged tile over the shared-memory limit is rejected") {
  // A 512 x 64 tile of A is 128 KiB; the budget is 99 KiB. (32 x 8
  // threads with 16 x 8 registers each stay within their limits.)
  Gemm g;
  g.schedule_fused(512, 64, 16, 8, 64, true);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "shared memory, 147456 bytes");
  CHECK_HAS(message, "over the budget of 101376 bytes per block");
  CHECK_HAS(message, "the largest buffer is 'A_shared' (131072 bytes, staged at loop 'ko')");
  CHECK_HAS(message, "stage smaller tiles");
}

TEST_CASE("shared memory over a smaller budget given to the Pipeline is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8); // A_shared and B_shared: 2 KiB each
  ResourceBudget budget;
  budget.shared_bytes = 3000;
  std::string message = user_error_of([&] { Pipeline(g.out, budget).loop_nest(); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "shared memory, 4096 bytes, is over the budget of 3000 bytes per block");
  CHECK_HAS(message, "2048 bytes, staged at loop 'ko'");
  // And the same schedule fits the default budget.
  CHECK_NOTHROW(Pipeline(g.out).loop_nest());
}

TEST_CASE("a register block over the per-thread budget is rejected") {
  Gemm g;
  g.schedule_fused(64, 16, 8); // 16 x 16 = 256 accumulators per thread
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "each thread holds 256 elements of 'acc' in registers");
  CHECK_HAS(message, "(loops 'ri' x 'rj')");
  CHECK_HAS(message, "over the budget of 128");
  CHECK_HAS(message, "smaller register block");
}

TEST_CASE("vectorizing a reduction loop is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.acc.update().vectorize(g.k); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "cannot vectorize reduction loop 'k'");
  CHECK_HAS(message, "vectorize a pure loop");
}

TEST_CASE("unrolling a loop whose extent is not a constant is rejected") {
  Gemm g;
  g.out.unroll(g.j);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "cannot make loop 'j' unrolled");
  CHECK_HAS(message, "its extent N is not a constant");
  CHECK_HAS(message, "split it by a constant factor");
}

TEST_CASE("a GPU lowering without block loops is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { lower_for_gpu(g.out); });
  CHECK_HAS(message, "'acc' is computed at root");
  CHECK_HAS(message, "compute it inside the output's kernel");
}

TEST_CASE("a GPU lowering whose outer loop is not a block loop is rejected") {
  Gemm g;
  g.out.fuse_epilogue(g.acc, g.j);
  std::string message = user_error_of([&] { lower_for_gpu(g.out); });
  CHECK_HAS(message, "loop 'i' of 'out' is serial");
  CHECK_HAS(message, "map it with gpu_blocks");
}
