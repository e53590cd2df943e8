#include "scheduler/VerifyPipelines.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/ConcreteValue.h"
#include "scheduler/PipelinePhases.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <vector>

namespace coalesce {

namespace {

enum class Role { Producer, Others };
const char *role_name(Role role) { return role == Role::Producer ? "the producer warps" : "the MMA warps"; }

// The barrier array a barrier operand (a Load of one of its slots) names.
const Load *barrier_of(const Call *op) {
  const auto *load = op->args.empty() ? nullptr : op->args[0].as<Load>();
  COALESCE_INTERNAL_ASSERT(load, op->name, " takes the load of its barrier first");
  return load;
}

class Verify : public IRVisitor {
public:
  explicit Verify(std::string output) : output_(std::move(output)) {}

  void finish() const {
    for (const Arrival &a : arrivals_) {
      auto init = inits_.find(a.array);
      if (init == inits_.end())
        fail("arrivals", a.array, str_cat(a.what, " arrives on it, but no mbarrier_init initializes it"));
      if (a.threads != init->second)
        fail("arrivals", a.array,
             str_cat(a.what, " is run by ", a.threads, " thread", a.threads == 1 ? "" : "s",
                     " per phase, but the barrier is initialized for ", init->second,
                     " arrivals: its phases would ", a.threads < init->second ? "never complete" : "complete early"));
    }
    for (const Wait &w : waits_) {
      if (!inits_.count(w.array))
        fail("waits", w.array, str_cat(role_name(w.role), " wait on it, but no mbarrier_init initializes it"));
      if (copied_.count(w.array)) {
        bool announced = false;
        for (const Arrival &a : arrivals_)
          announced |= a.array == w.array && a.expects_bytes;
        if (!announced)
          fail("waits", w.array, "TMA copies complete on it, but no mbarrier_expect_tx announces their bytes");
        continue;
      }
      bool completed = false;
      for (const Arrival &a : arrivals_)
        completed |= a.array == w.array && (a.role != w.role || a.order < w.order);
      if (!completed)
        fail("waits", w.array,
             str_cat(role_name(w.role), " wait on it, and nothing else arrives on it: no TMA copy, no arrival by the "
                                        "other role, none of their own before the wait"));
    }
  }

private:
  using IRVisitor::visit;

  struct Arrival {
    std::string array, what;
    Role role;
    int64_t threads;
    size_t order;
    bool expects_bytes;
  };
  struct Wait {
    std::string array;
    Role role;
    size_t order;
  };

  [[noreturn]] void fail(const char *rule, const std::string &array, const std::string &why) const {
    internal_error("the pipeline of '", output_, "' breaks the '", rule, "' rule on mbarrier '", array, "': ", why);
  }

  void visit(const For *op) override {
    bool thread = op->for_kind == ForKind::GpuThread;
    if (thread)
      threads_.push_back(op);
    int producers = producer_depth_;
    producer_depth_ += op->role == LoopRole::ProducerWarps;
    IRVisitor::visit(op);
    producer_depth_ = producers;
    if (thread)
      threads_.pop_back();
  }

  void visit(const IfThenElse *op) override {
    visit_expr(op->condition);
    guards_.push_back(op->condition);
    visit_stmt(op->then_case);
    guards_.back() = Not::make(op->condition);
    visit_stmt(op->else_case);
    guards_.pop_back();
  }

  // The bytes rule, within each block: expect_tx first, its copies after.
  void visit(const Block *op) override {
    struct Announced {
      Expr barrier;
      std::string array;
      int64_t expected, delivered;
    };
    std::vector<Announced> announced;
    for (const Stmt &s : op->stmts) {
      const auto *evaluate = s.as<Evaluate>();
      const auto *call = evaluate ? evaluate->value.as<Call>() : nullptr;
      if (call && call->intrinsic == Intrinsic::MbarrierExpectTx) {
        auto bytes = as_const_int(call->args[1]);
        if (!bytes)
          fail("bytes", barrier_of(call)->buffer, "its expect_tx's byte count is not a constant");
        announced.push_back({call->args[0], barrier_of(call)->buffer, *bytes, 0});
      } else if (const TensorCopy *copy = delivered_copy(s)) {
        const auto *barrier = copy->barrier.as<Load>();
        COALESCE_INTERNAL_ASSERT(barrier, "a TMA copy's barrier is not a load of one");
        Announced *match = nullptr;
        for (Announced &a : announced)
          if (a.array == barrier->buffer && equal(a.barrier, copy->barrier))
            match = &a;
        if (!match)
          fail("bytes", barrier->buffer,
               str_cat("a TMA copy of '", copy->input, "' completes on ", to_string(copy->barrier),
                       ", but no mbarrier_expect_tx before it in its block announces its bytes"));
        match->delivered += copy->bytes();
      }
      visit_stmt(s);
    }
    for (const Announced &a : announced)
      if (a.expected != a.delivered)
        fail("bytes", a.array,
             str_cat("mbarrier_expect_tx(", to_string(a.barrier), ", ", a.expected,
                     ") announces ", a.expected, " bytes, but the TMA copies after it deliver ", a.delivered));
  }

  // The copy a statement of a block delivers: a TMA copy, or one of two
  // that a branch picks between, the same bytes on the same barrier either
  // way (the input or its copy, PaddedCopy::WhereRowsAreRagged).
  const TensorCopy *delivered_copy(const Stmt &s) const {
    if (const auto *copy = s.as<TensorCopy>())
      return copy;
    const auto *branch = s.as<IfThenElse>();
    if (!branch || !branch->else_case.defined())
      return nullptr;
    const auto *then_copy = branch->then_case.as<TensorCopy>(), *else_copy = branch->else_case.as<TensorCopy>();
    if (!then_copy || !else_copy)
      return nullptr;
    if (then_copy->bytes() != else_copy->bytes() || !equal(then_copy->barrier, else_copy->barrier))
      fail("bytes", then_copy->barrier.as<Load>() ? then_copy->barrier.as<Load>()->buffer : std::string("?"),
           str_cat("a branch copies ", then_copy->bytes(), " bytes of '", then_copy->input, "' on ",
                   to_string(then_copy->barrier), " or ", else_copy->bytes(), " bytes of '", else_copy->input, "' on ",
                   to_string(else_copy->barrier), ": one expect_tx cannot announce both"));
    return then_copy;
  }

  void visit(const TensorCopy *op) override {
    if (const auto *barrier = op->barrier.as<Load>())
      copied_.insert(barrier->buffer);
    IRVisitor::visit(op);
  }

  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (op->call_type != CallType::Intrinsic)
      return;
    ++order_;
    switch (*op->intrinsic) {
    case Intrinsic::MbarrierInit: {
      const std::string &array = barrier_of(op)->buffer;
      auto count = as_const_int(op->args[1]);
      if (!count)
        fail("arrivals", array, "its arrival count is not a constant");
      auto [at, fresh] = inits_.emplace(array, *count);
      if (!fresh && at->second != *count)
        fail("arrivals", array, str_cat("its slots are initialized for ", at->second, " and ", *count, " arrivals"));
      return;
    }
    case Intrinsic::MbarrierExpectTx:
      arrivals_.push_back({barrier_of(op)->buffer, "an mbarrier_expect_tx", role(), executing_threads(), order_, true});
      return;
    case Intrinsic::MbarrierArrive: {
      int64_t blocks = 1;
      if (op->args.size() > 1) {
        auto c = as_const_int(op->args[1]);
        COALESCE_INTERNAL_ASSERT(c && *c > 0, "mbarrier_arrive's blocks are not a positive constant");
        blocks = *c;
      }
      arrivals_.push_back({barrier_of(op)->buffer, "an mbarrier_arrive", role(), executing_threads() * blocks, order_,
                           false});
      return;
    }
    case Intrinsic::MbarrierWait:
      waits_.push_back({barrier_of(op)->buffer, role(), order_});
      return;
    default:
      return;
    }
  }

  Role role() const { return producer_depth_ > 0 ? Role::Producer : Role::Others; }

  // How many threads of the block run the statement here: every point of
  // the enclosing thread loops (constant bounds) at which the enclosing
  // guards that depend on the threads alone hold. A guard that still
  // depends on something else once the threads are known (a step's bound)
  // is the same for every thread: it decides whether the statement runs
  // at this step, not how many threads run it.
  int64_t executing_threads() const {
    // A guard on the threads and a serial loop's variable (which group of
    // consumer warps takes a persistent block's tile): the same count at
    // every value of it, checked at its first two.
    auto is_thread = [&](const std::string &v) {
      return std::any_of(threads_.begin(), threads_.end(), [&](const For *l) { return l->name == v; });
    };
    std::set<std::string> others;
    for (const Expr &guard : guards_) {
      std::vector<const Variable *> vars = variables_of(guard);
      if (std::none_of(vars.begin(), vars.end(), [&](const Variable *v) { return is_thread(v->name); }))
        continue; // the same for every thread: whether the statement runs at this step
      for (const Variable *v : vars)
        if (!is_thread(v->name))
          others.insert(v->name);
    }
    if (!others.empty()) {
      int64_t first = executing_threads_at(others, 0), second = executing_threads_at(others, 1);
      COALESCE_INTERNAL_ASSERT(first == second, "the threads that run a statement of '", output_,
                               "' depend on a loop's step (", first, " then ", second, ")");
      return first;
    }
    return executing_threads_at(others, 0);
  }

  int64_t executing_threads_at(const std::set<std::string> &others, int64_t value) const {
    std::vector<const For *> loops;
    int64_t count = 1;
    for (const For *loop : threads_) {
      auto min = as_const_int(loop->min), extent = as_const_int(loop->extent);
      COALESCE_INTERNAL_ASSERT(min && extent, "thread loop '", loop->name, "' has bounds that are not constants");
      bool guarded = false;
      for (const Expr &guard : guards_)
        guarded |= expr_uses_var(guard, loop->name);
      if (guarded)
        loops.push_back(loop);
      else
        count *= *extent; // every thread of the loop alike
    }
    int64_t points = 0;
    std::map<std::string, int64_t> at;
    for (const std::string &v : others)
      at[v] = value;
    std::vector<int64_t> index(loops.size(), 0);
    for (;;) {
      for (size_t d = 0; d < loops.size(); ++d)
        at[loops[d]->name] = *as_const_int(loops[d]->min) + index[d];
      bool runs = true;
      for (const Expr &guard : guards_) {
        auto holds = concrete_value(guard, at);
        runs &= !holds || *holds != 0;
      }
      points += runs;
      size_t d = loops.size();
      while (d > 0 && ++index[d - 1] == *as_const_int(loops[d - 1]->extent))
        index[--d] = 0;
      if (d == 0)
        return count * points;
    }
  }

  const std::string output_;
  std::vector<const For *> threads_;
  std::vector<Expr> guards_;
  int producer_depth_ = 0;
  size_t order_ = 0;
  std::map<std::string, int64_t> inits_;
  std::set<std::string> copied_;
  std::vector<Arrival> arrivals_;
  std::vector<Wait> waits_;
};

// The phases rule, on the trace of one block (PipelinePhases.h): per
// barrier slot, from each init, the waits of one role alternate parity
// (two in a row for the same parity: the second finds the phase the first
// waited for complete and goes on before the next one, reading a slot not
// yet refilled, or refilling one still being read), and every phase a
// role's waits reach completes (else the wait never returns). The waits
// reach at least the phase of their first one's parity plus one per wait
// after it.
void check_phases(const PhaseTrace &trace, const std::string &output) {
  struct RoleWaits {
    int64_t count = 0;
    int first = 0, last = 0;
    std::string where;
  };
  struct Slot {
    int64_t completions = 0;
    std::map<bool, RoleWaits> waits; // by producer
  };
  auto fail = [&](const std::string &array, int64_t slot, const std::string &why) {
    internal_error("the pipeline of '", output, "' breaks the 'phases' rule on mbarrier '", array, "' (slot ", slot,
                   "): ", why);
  };
  auto role = [](bool producer) { return producer ? "the producer warps" : "the MMA warps"; };
  std::map<std::pair<std::string, int64_t>, Slot> slots;
  auto close = [&](const std::pair<std::string, int64_t> &key, const Slot &slot) {
    for (const auto &[producer, waits] : slot.waits) {
      const int64_t reached = waits.first + waits.count - 1;
      if (slot.completions < reached + 1)
        fail(key.first, key.second,
             str_cat(role(producer), " wait for its phase ", reached, " at least (", waits.count, " waits from parity ",
                     waits.first, "), but only ", slot.completions,
                     " phases complete from its init: the last wait never returns"));
    }
  };
  for (const PhaseEvent &event : trace.events) {
    if (event.kind == PhaseEvent::Kind::GroupSync || event.kind == PhaseEvent::Kind::GroupArrive ||
        event.kind == PhaseEvent::Kind::BlockSync)
      continue; // the order rule's
    const auto key = std::make_pair(event.array, event.slot);
    Slot &slot = slots[key];
    switch (event.kind) {
    case PhaseEvent::Kind::Init:
      close(key, slot);
      slot = Slot();
      break;
    case PhaseEvent::Kind::Complete: ++slot.completions; break;
    case PhaseEvent::Kind::GroupSync:
    case PhaseEvent::Kind::GroupArrive:
    case PhaseEvent::Kind::BlockSync: break; // skipped above
    case PhaseEvent::Kind::Wait: {
      RoleWaits &waits = slot.waits[event.producer];
      if (waits.count > 0 && waits.last == event.parity)
        fail(event.array, event.slot,
             str_cat(role(event.producer), " wait for parity ", event.parity, " twice in a row (", waits.where,
                     ", then ", event.where, "): the second finds the phase the first waited for complete"));
      if (waits.count == 0)
        waits.first = event.parity;
      waits.last = event.parity;
      waits.where = event.where;
      ++waits.count;
      break;
    }
    }
  }
  for (const auto &[key, slot] : slots)
    close(key, slot);
}

// The order rule, on the same trace: where the MMA warps' waits pass from
// the group of one warp to another's, the first group arrived on a named
// barrier after its waits and the second synced on it before its own, or
// a barrier of the whole block lies between them.
void check_order(const PhaseTrace &trace, const std::string &output) {
  // No MMA warp has waited since the last block-wide barrier (an event's
  // warp is -1 where it has none, so not that).
  constexpr int64_t kNoWarp = std::numeric_limits<int64_t>::min();
  int64_t waiting_warp = kNoWarp;      // whose group made the MMA warps' last wait
  std::set<int64_t> arrived, synced;   // the barriers it arrived on since; the warps that synced on one of them
  int64_t last_warp = 0;               // the highest warp that made an MMA warps' wait
  for (const PhaseEvent &event : trace.events) {
    switch (event.kind) {
    case PhaseEvent::Kind::BlockSync:
      // Where it holds every MMA warp, every group is past its waits: the
      // next may come from any.
      if (event.slot == 0 || event.slot >= 32 * (last_warp + 1)) {
        waiting_warp = kNoWarp;
        arrived.clear();
        synced.clear();
      }
      break;
    case PhaseEvent::Kind::GroupArrive:
      if (event.warp == waiting_warp)
        arrived.insert(event.slot);
      break;
    case PhaseEvent::Kind::GroupSync:
      if (arrived.count(event.slot))
        synced.insert(event.warp);
      break;
    case PhaseEvent::Kind::Wait:
      if (event.producer)
        break;
      if (waiting_warp != kNoWarp && event.warp != waiting_warp) {
        if (!synced.count(event.warp))
          internal_error("the pipeline of '", output, "' breaks the 'order' rule: the MMA warps' waits pass from ",
                         "the group of warp ", waiting_warp, " to the group of warp ", event.warp, " (", event.where,
                         ") without a named barrier that the first arrives on after its waits and the second ",
                         "syncs on before them: the second group's wait could run two phases ahead of the first's, ",
                         "where the parity it waits for is the same");
        arrived.clear();
        synced.clear();
      }
      waiting_warp = event.warp;
      last_warp = std::max(last_warp, event.warp);
      break;
    default: break;
    }
  }
}

} // namespace

void verify_pipelines(const Stmt &s, const std::string &output) {
  Verify verify(output);
  verify.visit_stmt(s);
  verify.finish();
  // The phases and order rules trace one block; where the trace cannot
  // know a bound or condition around a barrier, they check nothing.
  const PhaseTrace trace = trace_pipeline_phases(s);
  if (!trace.complete)
    return;
  check_phases(trace, output);
  check_order(trace, output);
}

} // namespace coalesce
