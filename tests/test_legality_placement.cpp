// One test per illegal schedule or algorithm (as test_legality.cpp): where
// Funcs are computed (compute_at, store_in, staging), illegal algorithms, and
// the verifier after lowering catching what the front end missed.

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
  CHECK_HAS(message, "stage_in_shared of 'bias' transposed, but it has 1 dimension");
  CHECK_HAS(message, "a tile is transposed in its last two dimensions");
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
