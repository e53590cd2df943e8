// scheduler/SplitWarpRoles: on a fused kernel body built by hand, a stretch
// between barriers with statements of both roles becomes one program per
// role; a part with barriers but nothing for the producer warps becomes the
// other threads' alone, its barriers counting only them; a part that calls
// last_arrival (whose barriers are the whole block's) is left to every
// thread; a loop whose barriers are then the other threads' own becomes
// one loop per role.

#include "ErrorCapture.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "scheduler/SplitWarpRoles.h"

#include <doctest/doctest.h>

#include <string>

using namespace coalesce;

namespace {

// Dimension y: threads 0..7 are the others, 8 and up the producer warps.
constexpr int kDim = 1, kOthers = 8, kOtherThreads = 256;

Stmt mark(const std::string &buffer) { return Store::make(buffer, {Expr(0)}, Expr(1)); }
Stmt on_others(Stmt s) { return IfThenElse::make(on_other_warps(kDim, kOthers), std::move(s)); }
Stmt on_producers(Stmt s) { return IfThenElse::make(on_producer_warps(kDim, kOthers), std::move(s)); }

std::string split(const Stmt &body) { return to_string(split_warp_roles(body, kDim, kOthers, kOtherThreads)); }

} // namespace

TEST_CASE("a stretch between barriers with both roles' statements becomes one program per role") {
  Stmt body = Block::make({on_others(mark("mma")), on_producers(mark("copy")), Barrier::make(), on_others(mark("epilogue"))});
  std::string text = split(body);
  CHECK(text ==
        "if thread_id.y() >= 8:\n"
        "  copy[0] = 1\n"
        "else:\n"
        "  mma[0] = 1\n"
        "barrier\n"
        "if thread_id.y() < 8:\n"
        "  epilogue[0] = 1\n");
}

TEST_CASE("a serial loop of both roles without barriers is run by each role as its own loop") {
  Stmt loop = For::make("ko", 0, Variable::make(Int(32), "K"), ForKind::Serial,
                        Block::make({on_others(mark("mma")), on_producers(mark("copy"))}));
  std::string text = split(Block::make({Barrier::make(), loop}));
  CHECK(text ==
        "barrier\n"
        "if thread_id.y() >= 8:\n"
        "  for ko in serial(0, K):\n"
        "    copy[0] = 1\n"
        "else:\n"
        "  for ko in serial(0, K):\n"
        "    mma[0] = 1\n");
}

TEST_CASE("a part with barriers and nothing for the producer warps is the others' alone, with their own barriers") {
  Stmt loop = For::make("ko", 0, Variable::make(Int(32), "K"), ForKind::Serial,
                        Block::make({on_others(mark("copy")), Barrier::make(), on_others(mark("mma")), Barrier::make()}));
  std::string text = split(Block::make({on_producers(mark("first")), Barrier::make(), loop}));
  CHECK(text ==
        "if thread_id.y() >= 8:\n"
        "  first[0] = 1\n"
        "barrier\n"
        "if thread_id.y() < 8:\n"
        "  for ko in serial(0, K):\n"
        "    copy[0] = 1\n"
        "    barrier (the first 256 threads)\n"
        "    mma[0] = 1\n"
        "    barrier (the first 256 threads)\n");
}

TEST_CASE("a part that calls last_arrival keeps the whole block's barriers and every thread") {
  Expr counter = Load::make(Int(32), "counters", {Expr(0)});
  Stmt combine = LetStmt::make("last", Call::make_intrinsic(Intrinsic::LastArrival, Int(32), {counter, Expr(2)}),
                               Block::make({on_others(mark("partials")), Barrier::make()}));
  std::string text = split(Block::make({on_producers(mark("first")), Barrier::make(), combine}));
  CHECK(text ==
        "if thread_id.y() >= 8:\n"
        "  first[0] = 1\n"
        "barrier\n"
        "let last = last_arrival(counters[0], 2)\n"
        "if thread_id.y() < 8:\n"
        "  partials[0] = 1\n"
        "barrier\n");
}

TEST_CASE("a loop whose barriers are the others' own (a persistent block's staged output tile) becomes one loop per "
          "role") {
  // The tile loop of a persistent block: the producer warps' copies, the
  // MMA warps' sums, and the output tile staged between two barriers that
  // only the MMA warps need. Split into one loop per role, no path leads
  // from the producer warps' program into the others' (ptxas would ignore
  // setmaxnreg otherwise).
  Stmt epilogue =
      LetStmt::make("aligned", Variable::make(Int(32), "N") % 8 == 0,
                    Block::make({on_others(mark("tile")), Barrier::make(), on_others(mark("out")), Barrier::make()}));
  Stmt tiles = For::make("tile", 0, Variable::make(Int(32), "T"), ForKind::Serial,
                         Block::make({on_producers(mark("copy")), on_others(mark("mma")), epilogue}));
  std::string text = split(Block::make({Barrier::make(), tiles}));
  CHECK(text == "barrier\n"
                "if thread_id.y() >= 8:\n"
                "  for tile in serial(0, T):\n"
                "    copy[0] = 1\n"
                "else:\n"
                "  for tile in serial(0, T):\n"
                "    mma[0] = 1\n"
                "    let aligned = N % 8 == 0\n"
                "    tile[0] = 1\n"
                "    barrier (the first 256 threads)\n"
                "    out[0] = 1\n"
                "    barrier (the first 256 threads)\n");
  // A barrier of the whole block in the loop (the producer warps' copies
  // before it, the others' reads after it) keeps one loop for both.
  Stmt shared = For::make("tile", 0, Variable::make(Int(32), "T"), ForKind::Serial,
                          Block::make({on_producers(mark("copy")), Barrier::make(), on_others(mark("read"))}));
  std::string together = split(Block::make({Barrier::make(), shared}));
  CHECK(together == "barrier\n"
                    "for tile in serial(0, T):\n"
                    "  if thread_id.y() >= 8:\n"
                    "    copy[0] = 1\n"
                    "  barrier\n"
                    "  if thread_id.y() < 8:\n"
                    "    read[0] = 1\n");
}

TEST_CASE("a barrier of the others alone that the producer warps, still in the kernel, would reach is an internal "
          "error") {
  auto split_error = [](const Stmt &s) {
    return coalesce::testing::internal_error_of([&] { split_warp_roles(s, kDim, kOthers, kOtherThreads); });
  };
  CHECK_HAS(split_error(Block::make({on_producers(mark("copy")), Barrier::make(kOtherThreads)})),
            "a barrier of the first 256 threads where the producer warps, still in the kernel, would reach it");
  // In the others' branch, or after the producers left, it is theirs.
  CHECK(split_error(Block::make({on_producers(mark("copy")), on_others(Barrier::make(kOtherThreads))})) ==
        "(no error)");
  Stmt exit = on_producers(Evaluate::make(Call::make_intrinsic(Intrinsic::ThreadExit, Int(32), {})));
  CHECK(split_error(Block::make({exit, Barrier::make(kOtherThreads)})) == "(no error)");
}
