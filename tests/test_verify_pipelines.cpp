// The pipeline verifier after lowering (scheduler/VerifyPipelines.h): the
// pipelines staging builds pass it (every schedule of the suite lowers
// through it), and each of its rules fails on a nest mutated to break it:
// an expect_tx announcing other bytes than its copies deliver, a copy
// dropped, a barrier initialized for other arrivals than a phase brings, a
// release run by every thread instead of each warp's first, arrivals gone,
// waits whose parities do not follow their slot's phases, a refill gone,
// groups of MMA warps taking tiles in turn without their named barriers.

#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "scheduler/Lower.h"
#include "scheduler/PipelinePhases.h"
#include "scheduler/Simplify.h"
#include "scheduler/VerifyPipelines.h"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// The serial nest of a bf16 GEMM + bias + GELU on `t`.
Stmt serial_nest(const MmaTiling &t) {
  Gemm g = coalesce::testing::bf16_scheduled(t);
  return lower_gpu_nest(g.out).serial;
}

// The pipeline kinds staging builds: the MMA warps' first thread issuing
// the copies; a producer warp; a producer warpgroup that reallocates; one
// pipeline across a persistent block's tiles; clusters of 2 with producers.
std::vector<MmaTiling> pipelines() {
  MmaTiling first = coalesce::testing::one_tile_tma_tiling(kKind, 3);
  MmaTiling warp = first;
  warp.producer_warps = 1;
  warp.min_blocks_per_sm = 1;
  MmaTiling group = first;
  group.producer_warps = 4;
  group.producer_registers = 40;
  group.min_blocks_per_sm = 2;
  MmaTiling across = group;
  across.persistent_blocks = 3;
  MmaTiling cluster = warp;
  cluster.cluster_blocks = 2;
  // Each box from the input or its copy, picked per launch.
  MmaTiling where_ragged = first;
  where_ragged.tma_padded_copies = PaddedCopies::WhereRagged;
  return {first, warp, group, across, cluster, where_ragged};
}

// A TMA copy, or a branch between two (PaddedCopy::WhereRowsAreRagged).
bool copies(const Stmt &s) {
  const auto *branch = s.as<IfThenElse>();
  return s.as<TensorCopy>() || (branch && branch->then_case.as<TensorCopy>());
}

std::string verifier_error(const Stmt &s) {
  return coalesce::testing::internal_error_of([&] { verify_pipelines(s, "out"); });
}

// `s` with every intrinsic statement `which` rewritten by `rewrite` (an
// undefined result drops it).
Stmt rewrite_calls(const Stmt &s, Intrinsic which, std::function<Stmt(const Call *)> rewrite) {
  class Rewrite : public IRMutator {
  public:
    Rewrite(Intrinsic w, std::function<Stmt(const Call *)> r) : which_(w), rewrite_(std::move(r)) {}

  private:
    using IRMutator::visit;
    Intrinsic which_;
    std::function<Stmt(const Call *)> rewrite_;
    Stmt visit(const Evaluate *op, const Stmt &self) override {
      const auto *call = op->value.as<Call>();
      if (!call || call->intrinsic != which_)
        return self;
      Stmt result = rewrite_(call);
      return result.defined() ? result : Block::make({});
    }
  } mutator(which, std::move(rewrite));
  return mutator.mutate(s);
}

Stmt call(Intrinsic which, std::vector<Expr> args) {
  return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
}

} // namespace

TEST_CASE("every pipeline staging builds passes the verifier") {
  for (const MmaTiling &t : pipelines()) {
    CAPTURE(t.str());
    CHECK(verifier_error(serial_nest(t)) == "(no error)");
  }
}

TEST_CASE("the bytes rule: an expect_tx announces what its copies deliver, and every copy is announced") {
  for (const MmaTiling &t : pipelines()) {
    CAPTURE(t.str());
    Stmt nest = serial_nest(t);
    Stmt more = rewrite_calls(nest, Intrinsic::MbarrierExpectTx, [](const Call *op) {
      return call(Intrinsic::MbarrierExpectTx, {op->args[0], Expr(static_cast<int>(*as_const_int(op->args[1])) + 128)});
    });
    CHECK_HAS(verifier_error(more), "breaks the 'bytes' rule on mbarrier 'A_full'");
    CHECK_HAS(verifier_error(more), "bytes, but the TMA copies after it deliver");
    // The first copy of every block dropped: fewer bytes than announced.
    class DropFirstCopy : public IRMutator {
      using IRMutator::visit;
      Stmt visit(const Block *op, const Stmt &self) override {
        std::vector<Stmt> kept;
        bool dropped = false;
        for (const Stmt &s : op->stmts) {
          if (!dropped && copies(s)) {
            dropped = true;
            continue;
          }
          kept.push_back(mutate(s));
        }
        return dropped ? Block::make(kept) : IRMutator::visit(op, self);
      }
    } drop;
    CHECK_HAS(verifier_error(drop.mutate(nest)), "breaks the 'bytes' rule");
    Stmt unannounced = rewrite_calls(nest, Intrinsic::MbarrierExpectTx, [](const Call *) { return Stmt(); });
    CHECK_HAS(verifier_error(unannounced), "but no mbarrier_expect_tx before it in its block announces its bytes");
    // A branch between the input and its copy whose copy delivers half the
    // rows: one expect_tx cannot announce both.
    class HalveElseCopy : public IRMutator {
    public:
      bool halved = false;

    private:
      using IRMutator::visit;
      Stmt visit(const IfThenElse *op, const Stmt &self) override {
        const auto *copy = op->else_case.defined() ? op->else_case.as<TensorCopy>() : nullptr;
        if (!copy || !op->then_case.as<TensorCopy>())
          return IRMutator::visit(op, self);
        halved = true;
        std::vector<int> box = copy->box;
        box[box.size() - 2] /= 2;
        return IfThenElse::make(op->condition, op->then_case,
                                TensorCopy::make(copy->input, copy->origin, box, copy->destination, copy->barrier,
                                                 copy->copy, copy->multicast));
      }
    } halve;
    Stmt halved = halve.mutate(nest);
    if (halve.halved)
      CHECK_HAS(verifier_error(halved), "one expect_tx cannot announce both");
    CHECK(halve.halved == (t.tma_padded_copies == PaddedCopies::WhereRagged));
  }
}

TEST_CASE("the arrivals rule: one statement's threads complete one phase") {
  for (const MmaTiling &t : pipelines()) {
    CAPTURE(t.str());
    if (t.producer_warps == 0)
      continue; // no empty barriers
    Stmt nest = serial_nest(t);
    // The empty barriers initialized for one arrival fewer.
    Stmt fewer = rewrite_calls(nest, Intrinsic::MbarrierInit, [](const Call *op) {
      const auto *load = op->args[0].as<Load>();
      bool empty = load->buffer.find("_empty") != std::string::npos;
      int count = static_cast<int>(*as_const_int(op->args[1]));
      return call(Intrinsic::MbarrierInit, {op->args[0], Expr(empty ? count - 1 : count)});
    });
    std::string message = verifier_error(fewer);
    CHECK_HAS(message, "breaks the 'arrivals' rule on mbarrier 'A_empty'");
    CHECK_HAS(message, "its phases would complete early");
    // Every MMA thread releasing the slot, not each warp's first.
    class Unguard : public IRMutator {
      using IRMutator::visit;
      Stmt visit(const IfThenElse *op, const Stmt &self) override {
        const auto *evaluate = op->then_case.as<Evaluate>();
        const auto *arrive = evaluate ? evaluate->value.as<Call>() : nullptr;
        if (arrive && arrive->intrinsic == Intrinsic::MbarrierArrive && !op->else_case.defined())
          return op->then_case;
        return IRMutator::visit(op, self);
      }
    } unguard;
    CHECK_HAS(verifier_error(unguard.mutate(nest)), "is run by");
    // The copies announced by every producer thread, not the first.
    class AllProducers : public IRMutator {
      using IRMutator::visit;
      Stmt visit(const IfThenElse *op, const Stmt &self) override {
        // The first producer thread's guard: warp == first && lane == 0.
        if (to_string(op->condition).find("lane == 0") != std::string::npos && !op->else_case.defined())
          return mutate(op->then_case);
        return IRMutator::visit(op, self);
      }
    } all_producers;
    CHECK_HAS(verifier_error(all_producers.mutate(nest)), "breaks the 'arrivals' rule on mbarrier 'A_full'");
  }
}

TEST_CASE("the waits rule: something completes every barrier a role waits on") {
  for (const MmaTiling &t : pipelines()) {
    CAPTURE(t.str());
    if (t.producer_warps == 0)
      continue;
    Stmt released = rewrite_calls(serial_nest(t), Intrinsic::MbarrierArrive, [](const Call *) { return Stmt(); });
    CHECK_HAS(verifier_error(released), "breaks the 'waits' rule on mbarrier 'A_empty'");
    CHECK_HAS(verifier_error(released), "nothing else arrives on it");
  }
  // A barrier nobody initialized.
  Stmt wait = call(Intrinsic::MbarrierWait, {Load::make(UInt(64), "X_full", {Expr(0)}), Expr(0)});
  CHECK_HAS(verifier_error(wait), "breaks the 'waits' rule on mbarrier 'X_full'");
}

TEST_CASE("the phases rule: each role's waits on a slot alternate parity, and every phase they reach completes") {
  for (const MmaTiling &t : pipelines()) {
    CAPTURE(t.str());
    Stmt nest = serial_nest(t);
    // The trace runs every pipeline kind to its end: several tiles' worth
    // of k steps, each slot reused, both roles waiting.
    PhaseTrace trace = trace_pipeline_phases(nest);
    INFO(trace.why);
    REQUIRE(trace.complete);
    std::map<std::pair<std::string, int64_t>, int> waits;
    int producer_waits = 0;
    for (const PhaseEvent &e : trace.events)
      if (e.kind == PhaseEvent::Kind::Wait) {
        ++waits[{e.array, e.slot}];
        producer_waits += e.producer;
      }
    CHECK(waits[{"A_full", 0}] >= 3);
    CHECK((producer_waits > 0) == (t.producer_warps > 0));
    // Every wait for parity 0: the second wait on a slot finds the first
    // phase complete.
    Stmt same_parity = rewrite_calls(nest, Intrinsic::MbarrierWait, [](const Call *op) {
      return call(Intrinsic::MbarrierWait, {op->args[0], Expr(0)});
    });
    CHECK_HAS(verifier_error(same_parity), "breaks the 'phases' rule on mbarrier 'A_full' (slot 0)");
    CHECK_HAS(verifier_error(same_parity), "wait for parity 0 twice in a row");
    // Every wait one phase late: the last one waits for a phase no fill
    // completes.
    Stmt late = rewrite_calls(nest, Intrinsic::MbarrierWait, [](const Call *op) {
      return call(Intrinsic::MbarrierWait, {op->args[0], simplify((op->args[1] + 1) % 2)});
    });
    CHECK_HAS(verifier_error(late), "breaks the 'phases' rule");
    CHECK_HAS(verifier_error(late), "the last wait never returns");
  }
  // A refill dropped (the steps' expect_tx and copies of the first thread's
  // pipeline): the slot's later phases never complete.
  class DropRefills : public IRMutator {
    using IRMutator::visit;
    Stmt visit(const For *op, const Stmt &self) override {
      // The copies of "next" tiles run in the thread loops named for them.
      if (op->for_kind == ForKind::GpuThread && op->name.find("next") != std::string::npos)
        return Block::make({});
      return IRMutator::visit(op, self);
    }
  } drop;
  Stmt nest = serial_nest(pipelines().front());
  Stmt dropped = drop.mutate(nest);
  REQUIRE(!dropped.same_as(nest));
  CHECK_HAS(verifier_error(dropped), "the last wait never returns");
}

TEST_CASE("the order rule: groups of MMA warps that take tiles in turn hand the pipeline over by a named barrier") {
  Stmt nest = serial_nest(ping_pong_mma_tiling(kKind, 3));
  PhaseTrace trace = trace_pipeline_phases(nest);
  INFO(trace.why);
  REQUIRE(trace.complete);
  // Both groups wait (the first warp of each: 0 and 4), and hand over.
  std::set<int64_t> waiting, arriving;
  for (const PhaseEvent &e : trace.events) {
    if (e.kind == PhaseEvent::Kind::Wait && !e.producer)
      waiting.insert(e.warp);
    if (e.kind == PhaseEvent::Kind::GroupArrive)
      arriving.insert(e.warp);
  }
  CHECK(waiting == std::set<int64_t>{0, 4});
  CHECK(arriving == std::set<int64_t>{0, 4});
  CHECK(verifier_error(nest) == "(no error)");
  for (Intrinsic dropped : {Intrinsic::GroupBarrierSync, Intrinsic::GroupBarrierArrive}) {
    Stmt without = rewrite_calls(nest, dropped, [](const Call *) { return Stmt(); });
    REQUIRE(!without.same_as(nest));
    CHECK_HAS(verifier_error(without), "breaks the 'order' rule");
    CHECK_HAS(verifier_error(without), "from the group of warp 0 to the group of warp 4");
  }
  // A group syncing on a barrier the other did not arrive on.
  Stmt crossed = rewrite_calls(nest, Intrinsic::GroupBarrierSync, [](const Call *op) {
    return call(Intrinsic::GroupBarrierSync, {simplify(op->args[0] + 1), op->args[1]});
  });
  CHECK_HAS(verifier_error(crossed), "breaks the 'order' rule");
}

TEST_CASE("the order rule: a barrier of every MMA warp orders the groups' waits, one of fewer does not") {
  // In clusters, the block waits for each slot's last release (the peers')
  // before it leaves: a wait of warp 0 after the last tile's group (warp 4)
  // waited, behind a barrier of the 256 MMA threads (the producers left).
  MmaTiling t = ping_pong_mma_tiling(kKind, 4);
  t.cluster_blocks = 2;
  Stmt nest = serial_nest(t);
  CHECK(verifier_error(nest) == "(no error)");
  struct Narrow : IRMutator {
    using IRMutator::visit;
    int narrowed = 0;
    Stmt visit(const Barrier *op, const Stmt &self) override {
      if (op->threads != 256)
        return self;
      ++narrowed;
      return Barrier::make(128); // one group's warps only
    }
  } narrow;
  Stmt narrowed = narrow.mutate(nest);
  REQUIRE(narrow.narrowed > 0);
  CHECK_HAS(verifier_error(narrowed), "breaks the 'order' rule");
  CHECK_HAS(verifier_error(narrowed), "from the group of warp 4 to the group of warp 0");
}

TEST_CASE("a nest lowered without its verifiers (the compile cache's key) is verified before it becomes kernels") {
  Gemm g = coalesce::testing::bf16_scheduled(pipelines().front());
  auto more_bytes = [](const Stmt &s) {
    return rewrite_calls(s, Intrinsic::MbarrierExpectTx, [](const Call *op) {
      return call(Intrinsic::MbarrierExpectTx, {op->args[0], Expr(static_cast<int>(*as_const_int(op->args[1])) + 128)});
    });
  };
  GpuNest pending = lower_gpu_nest_unverified(g.out);
  REQUIRE(pending.unverified);
  CHECK(to_string(pending.serial) == to_string(lower_gpu_nest(g.out).serial));
  // A nest the verifiers refuse: finish_gpu_program and verify_gpu_nest
  // run them on it, and the refused nest stays unverified.
  pending.serial = more_bytes(pending.serial);
  CHECK_HAS(coalesce::testing::internal_error_of([&] { finish_gpu_program(pending); }), "breaks the 'bytes' rule");
  CHECK_HAS(coalesce::testing::internal_error_of([&] { verify_gpu_nest(pending); }), "breaks the 'bytes' rule");
  CHECK(pending.unverified);
  // A good one is verified once: afterwards nothing is pending.
  GpuNest good = lower_gpu_nest_unverified(g.out);
  verify_gpu_nest(good);
  CHECK_FALSE(good.unverified);
  CHECK_FALSE(lower_gpu_nest(g.out).unverified);
}
