// One test per illegal schedule or algorithm: each builds a small pipeline,
// expects a UserError, and checks that the message names the Func, the loop
// or variable, and the rule. An InternalError, or no error at all, fails.

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

using namespace coalesce;

namespace {

using testing::user_error_of;

// C = relu(A*B + bias) as two Funcs: the reduction `acc` and the epilogue `out`.
struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func acc{"acc"}, out{"out"};

  Gemm() {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = relu(acc(i, j) + bias(j));
  }

  // A CPU schedule: acc computed per 2 x 2 tile of out, in registers.
  void schedule_tiles() {
    out.tile(i, j, bi, bj, ii, jj, 2, 2);
    acc.compute_at(out, bj);
  }

  // The fused GPU schedule: tile x tile blocks, rb x rb register blocks, K
  // staged kstep at a time (A and B in shared memory).
  void schedule_fused(int tile, int rb, int kstep, bool stage = true) {
    schedule_fused(tile, tile, rb, rb, kstep, stage);
  }
  void schedule_fused(int tile_i, int tile_j, int rb_i, int rb_j, int kstep, bool stage) {
    out.tile(i, j, bi, bj, ii, jj, tile_i, tile_j)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, rb_i, rb_j)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update().split(k, ko, ki, kstep).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
    if (stage)
      acc.update().stage_in_shared(A, ko).stage_in_shared(B, ko);
  }
};

void lower(const Func &out, const ResourceBudget &budget = {}) { lower_loop_nest(out, budget); }

} // namespace

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

// ---------------------------------------------------------------- placement

TEST_CASE("compute_at a Func that does not consume it is rejected") {
  Gemm g;
  Func twice("twice");
  twice(g.i, g.j) = g.bias(g.j) * 2.0f;
  Func out("out2");
  out(g.i, g.j) = g.acc(g.i, g.j) + twice(g.i, g.j);
  g.acc.compute_at(twice, g.j);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "compute_at 'twice', which does not call 'acc'");
  CHECK_HAS(message, "a Func that uses it");
}

TEST_CASE("compute_at of a Func inside its own loop is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.acc.compute_at(g.acc, g.j); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "inside its own loop 'j'");
}

TEST_CASE("compute_at of the output is rejected") {
  Gemm g;
  Func last("last");
  last(g.i, g.j) = g.out(g.i, g.j) * 2.0f;
  g.out.compute_root();
  g.acc.compute_root();
  Func(g.out).compute_at(last, g.j);
  // out is the output only when lowered alone.
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "is the pipeline's output, which is always computed at root");
}

TEST_CASE("store_in(register) without compute_at is rejected") {
  Gemm g;
  g.acc.store_in(MemoryType::Register);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "store_in(register) needs 'acc' computed inside a loop of its consumer (compute_at)");
}

TEST_CASE("a register tile of non-constant size is rejected") {
  Gemm g;
  g.out.split(g.i, g.bi, g.ii, 8);
  g.acc.compute_at(g.out, g.bi).store_in(MemoryType::Register);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "its tile at 'out.bi' has a size that is not a constant");
  CHECK_HAS(message, "cannot be stored in register");
}

TEST_CASE("inlining a reduction is rejected") {
  Gemm g;
  std::string message = user_error_of([&] { g.acc.compute_inline(); });
  CHECK_HAS(message, "cannot inline 'acc'");
  CHECK_HAS(message, "update definitions");
}

TEST_CASE("compute_at after the consumer's loops were split again is rejected") {
  Gemm g;
  g.out.split(g.i, g.bi, g.ii, 16);
  g.out.fuse_epilogue(g.acc, g.bi);
  g.out.split(g.j, g.bj, g.jj, 16); // after compute_at: acc mirrors stale loops
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "'out' was rescheduled after acc.compute_at(out, bi)");
  CHECK_HAS(message, "schedule 'out' fully first");
}

TEST_CASE("compute_at after the consumer's loops were mapped to threads is rejected") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ti, g.tj, 16, 16).gpu_blocks({g.bi, g.bj});
  g.out.fuse_epilogue(g.acc, g.bj);
  g.out.gpu_threads({g.ti, g.tj}); // after compute_at: acc's mirrored loops stay serial
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "'out' was rescheduled after acc.compute_at(out, bj)");
}

TEST_CASE("compute_at after splitting the producer's own pure loops is rejected") {
  Gemm g;
  g.acc.split(g.i, g.bi, g.ii, 4);
  std::string message = user_error_of([&] { g.acc.compute_at(g.out, g.j); });
  CHECK_HAS(message, "in schedule for 'acc'");
  CHECK_HAS(message, "compute_at after splitting its own pure loops");
}

TEST_CASE("an update reading a Func computed inside its pure loops is rejected") {
  Gemm g;
  Func scale("scale"), sum("sum");
  scale(g.i, g.j) = g.bias(g.j) * 2.0f;
  sum(g.i, g.j) = g.bias(g.j);
  sum(g.i, g.j) += scale(g.i, g.j) * g.A(g.i, g.k) * g.B(g.k, g.j);
  scale.compute_at(sum, g.j);
  std::string message = user_error_of([&] { lower(sum); });
  CHECK_HAS(message, "'sum' (update 0) reads 'scale'");
  CHECK_HAS(message, "compute 'scale' at root");
}

TEST_CASE("stage_in_shared of an input the stage does not read is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  g.acc.update().stage_in_shared(g.bias, g.ko);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "stage_in_shared of 'bias' at 'ko'");
  CHECK_HAS(message, "does not read");
}

TEST_CASE("staging at a loop inside the thread loops is rejected") {
  // Each thread would fill the block's one tile with its own rows of A:
  // right when the threads run one by one, a race on the GPU.
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  g.acc.update().stage_in_shared(g.A, g.ki);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "stage_in_shared of 'A' at 'ki', which is inside loop 'ti' mapped to GPU threads");
  CHECK_HAS(message, "Stage at a loop outside the thread loops");
  CHECK_HAS(message, "reorder({ko, ti, tj, ki, ...})");
}

TEST_CASE("staging at a reduction loop left inside the thread loops is rejected") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 64, 64)
      .gpu_blocks({g.bi, g.bj})
      .register_block(g.ii, g.jj, g.ti, g.tj, g.ri, g.rj, 4, 4)
      .gpu_threads({g.ti, g.tj});
  g.out.fuse_epilogue(g.acc, g.bj);
  g.acc.update().split(g.k, g.ko, g.ki, 8).stage_in_shared(g.A, g.ko); // no reorder: ko is inside ti, tj
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "stage_in_shared of 'A' at 'ko', which is inside loop 'ti' mapped to GPU threads");
}

TEST_CASE("staging at a thread loop is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  g.out.pure().stage_in_shared(g.bias, g.ti);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "stage_in_shared of 'bias' at 'ti', a loop mapped to GPU threads");
}

TEST_CASE("staging at a block loop is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  g.out.pure().stage_in_shared(g.bias, g.bj);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "stage_in_shared of 'bias' at 'bj', a loop mapped to GPU blocks");
  CHECK_HAS(message, "shared memory belongs to one block");
}

TEST_CASE("splitting a loop after staging at it is rejected") {
  Gemm g;
  g.acc.update().stage_in_shared(g.A, g.k).split(g.k, g.ko, g.ki, 8);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "stage_in_shared of 'A' at 'k', which is no longer a loop");
  CHECK_HAS(message, "split after staging");
}

TEST_CASE("a tile stored in heap memory inside a GPU kernel is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  g.acc.store_in(MemoryType::Heap);
  // Refused on every target: the CPU run checks the GPU path's structure too.
  for (auto lowering : {+[](const Func &f) { (void)lower(f); }, +[](const Func &f) { (void)lower_for_gpu(f); }}) {
    std::string message = user_error_of([&] { lowering(g.out); });
    CHECK_HAS(message, "'acc' is computed inside the kernel but stored in heap memory");
    CHECK_HAS(message, "store it in registers or shared memory");
  }
}

TEST_CASE("staging with negative padding is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  SharedLayout layout;
  layout.padding = -1;
  std::string message = user_error_of([&] { g.acc.update().stage_in_shared(g.A, g.ko, layout); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "stage_in_shared of 'A' with padding -1");
  CHECK_HAS(message, "padding must be zero or positive");
}

TEST_CASE("staging a one-dimensional input transposed is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8, false);
  SharedLayout layout;
  layout.transposed = true;
  std::string message = user_error_of([&] { g.out.pure().stage_in_shared(g.bias, g.bj, layout); });
  CHECK_HAS(message, "in schedule for 'out'");
  CHECK_HAS(message, "stage_in_shared of 'bias' transposed, but it has 1 dimensions");
  CHECK_HAS(message, "only 2-D tiles can be transposed");
}

TEST_CASE("double-buffered staging at a loop that is not serial is rejected") {
  // The rule is check_staging's, at lowering (the call records the
  // request), after the rule that a tile is staged outside the thread
  // loops: ki, unrolled, goes outside them.
  auto schedule = [](Gemm &g) {
    g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 64, 64)
        .gpu_blocks({g.bi, g.bj})
        .register_block(g.ii, g.jj, g.ti, g.tj, g.ri, g.rj, 4, 4)
        .gpu_threads({g.ti, g.tj});
    g.out.fuse_epilogue(g.acc, g.bj);
    g.acc.update().split(g.k, g.ko, g.ki, 8).reorder({g.ko, g.ki, g.ti, g.tj, g.ri, g.rj}).unroll(g.ki);
  };
  for (TileCopies copies : {TileCopies(AsyncCopies{}), TileCopies(RegisterDoubleBuffer{})}) {
    CAPTURE(describe(copies));
    Gemm g;
    schedule(g);
    g.acc.update().stage_in_shared(g.A, g.ki, {}, copies);
    std::string message = user_error_of([&] { lower(g.out); });
    CHECK_HAS(message, "in schedule for 'acc' (update 0)");
    CHECK_HAS(message, str_cat("'A' is staged with ", describe(copies), " at 'ki', which is unrolled"));
    CHECK_HAS(message, "more than one buffer needs a serial loop");
  }
  // One buffer has no next tile to fetch: the same loop takes it.
  Gemm g;
  schedule(g);
  g.acc.update().stage_in_shared(g.A, g.ki, {}, OneBuffer{});
  CHECK_NOTHROW(lower(g.out));
}

TEST_CASE("staging one input twice is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8);
  std::string message = user_error_of([&] { g.acc.update().stage_in_shared(g.A, g.ki); });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "'A' is already staged in shared memory at 'ko'");
}

// ---------------------------------------------------------------- algorithm

TEST_CASE("a Func called at other coordinates is rejected") {
  Gemm g;
  Func out("out");
  out(g.i, g.j) = g.acc(g.j, g.i);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "'out' calls 'acc' at acc(j, i)");
  CHECK_HAS(message, "only at its own coordinates, acc(i, j)");
}

TEST_CASE("two Funcs with the same name are rejected") {
  Gemm g;
  Func first("twin"), second("twin"), out("out");
  first(g.i, g.j) = g.A(g.i, g.j);
  second(g.i, g.j) = g.B(g.i, g.j);
  out(g.i, g.j) = first(g.i, g.j) + second(g.i, g.j);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "two different Funcs are named 'twin'");
  CHECK_HAS(message, "give each its own name");
}

TEST_CASE("a Func and an Input with the same name are rejected") {
  Gemm g;
  Func a("A"), out("out");
  a(g.i, g.j) = g.B(g.i, g.j);
  out(g.i, g.j) = a(g.i, g.j) + g.A(g.i, g.j);
  std::string message = user_error_of([&] { lower(out); });
  CHECK_HAS(message, "'A' names both a Func and an Input");
}

TEST_CASE("an undefined Func used in a definition is rejected") {
  Gemm g;
  Func missing("missing"), out("out");
  std::string message = user_error_of([&] { out(g.i, g.j) = missing(g.i, g.j) + 1.0f; });
  CHECK_HAS(message, "Func 'missing' is used before it is defined");
}

TEST_CASE("an undefined Func lowered is rejected") {
  Func nothing("nothing");
  std::string message = user_error_of([&] { lower(nothing); });
  CHECK_HAS(message, "Func 'nothing' has no definition to lower");
}

TEST_CASE("scheduling an undefined Func is rejected") {
  Var x("x"), xo("xo"), xi("xi");
  Func nothing("nothing");
  std::string message = user_error_of([&] { nothing.split(x, xo, xi, 4); });
  CHECK_HAS(message, "Func 'nothing' is scheduled before it is defined");
}

TEST_CASE("a reduction variable in a pure definition is rejected") {
  Gemm g;
  Func f("f");
  std::string message = user_error_of([&] { f(g.i, g.j) = g.A(g.i, g.k); });
  CHECK_HAS(message, "the pure definition of 'f' uses reduction variable 'k'");
  CHECK_HAS(message, "write the reduction as an update");
}

TEST_CASE("+= without an initial value is rejected") {
  Gemm g;
  Func f("f");
  std::string message = user_error_of([&] { f(g.i, g.j) += g.A(g.i, g.k); });
  CHECK_HAS(message, "'f' += ... needs an initial value first");
}

TEST_CASE("an update writing at other coordinates is rejected") {
  Gemm g;
  Func f("f");
  f(g.i, g.j) = 0.0f;
  std::string message = user_error_of([&] { f(g.j, g.i) = g.A(g.i, g.j); });
  CHECK_HAS(message, "update of 'f' writes at j in dimension 0");
  CHECK_HAS(message, "f(i, ...)");
}

TEST_CASE("an output extent that cannot be inferred is rejected") {
  Gemm g;
  Func f("f");
  f(g.i, g.j) = g.bias(g.j) * 2.0f;
  std::string message = user_error_of([&] { lower(f); });
  CHECK_HAS(message, "cannot infer the extent of 'f' along 'i'");
  CHECK_HAS(message, "f.bound(i, extent)");
}

// ------------------------------------------------------ the IR verifier

TEST_CASE("the epilogue verifier rejects a store inside another Func's reduction loop") {
  Gemm g;
  Environment env = make_environment(g.out);
  Expr i = Variable::make(Int(32), "out.s0.i"), j = Variable::make(Int(32), "out.s0.j");
  Expr partial = Load::make(Float(32), "acc", {i, j});
  Stmt store = Store::make("out", {i, j}, partial);
  Stmt inside = For::make("acc.s1.k", 0, 8, ForKind::Serial, store, -1, {"acc"});
  try {
    verify_epilogue_placement(inside, env);
    FAIL("the verifier accepted a store to 'out' inside a reduction loop of 'acc'");
  } catch (const InternalError &e) {
    std::string message = e.what();
    CHECK_HAS(message, "the store to 'out' is inside loop 'acc.s1.k', a reduction loop of 'acc'");
    CHECK_HAS(message, "partial sums");
  }
}

TEST_CASE("the epilogue verifier accepts a reduction's own store and an epilogue after it") {
  Gemm g;
  Environment env = make_environment(g.out);
  Expr i = Variable::make(Int(32), "i"), j = Variable::make(Int(32), "j");
  Expr running = Load::make(Float(32), "acc", {i, j});
  Stmt update = For::make("acc.s1.k", 0, 8, ForKind::Serial, Store::make("acc", {i, j}, running + 1.0f), -1, {"acc"});
  Stmt epilogue = Store::make("out", {i, j}, running);
  CHECK_NOTHROW(verify_epilogue_placement(Block::make({update, epilogue}), env));
  // The verifier runs in every lowering; the fused schedule passes it.
  Gemm fused;
  fused.schedule_fused(64, 4, 8);
  CHECK_NOTHROW(lower(fused.out));
}

TEST_CASE("gpu_min_blocks_per_sm on a Func other than the output is rejected") {
  Gemm g;
  g.schedule_fused(64, 4, 8);
  g.acc.gpu_min_blocks_per_sm(2);
  std::string message = user_error_of([&] { lower(g.out); });
  CHECK_HAS(message, "'acc'");
  CHECK_HAS(message, "gpu_min_blocks_per_sm");
  CHECK_HAS(message, "not the output");
  std::string range = user_error_of([&] { g.out.gpu_min_blocks_per_sm(0); });
  CHECK_HAS(range, "between 1 and 32");
}

TEST_CASE("staging an input read at non-affine coordinates names the loops as the user wrote them") {
  Gemm g;
  Func skewed("skewed");
  skewed(g.i, g.j) = 0.0f;
  skewed(g.i, g.j) += g.A(g.i, g.k * 2 % g.K) * g.B(g.k, g.j);
  Func result("result");
  result(g.i, g.j) = skewed(g.i, g.j);
  result.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8);
  skewed.compute_at(result, g.bj);
  skewed.update().split(g.k, g.ko, g.ki, 4).reorder({g.ko, g.ii, g.jj, g.ki}).stage_in_shared(g.A, g.ko);
  std::string message = user_error_of([&] { lower(result); });
  CHECK_HAS(message, "cannot stage 'A' in shared memory at 'ko'");
  CHECK_HAS(message, "(ko*8 + ki*2) % K");
  CHECK(message.find(".s1.") == std::string::npos);
}
