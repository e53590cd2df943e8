#include "scheduler/PipelinePhases.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/ConcreteValue.h"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <vector>

namespace coalesce {

namespace {

// The operations the trace records: the mbarriers', and the named barriers
// between groups of consumer warps.
bool is_traced_operation(const Call *op) {
  if (op->call_type != CallType::Intrinsic)
    return false;
  switch (*op->intrinsic) {
  case Intrinsic::MbarrierInit:
  case Intrinsic::MbarrierExpectTx:
  case Intrinsic::MbarrierArrive:
  case Intrinsic::MbarrierWait:
  case Intrinsic::GroupBarrierSync:
  case Intrinsic::GroupBarrierArrive: return true;
  default: return false;
  }
}

// The statements that hold an mbarrier operation, found in one walk: each
// operation marks the statements on the path to it.
class BarrierHolders : public IRVisitor {
public:
  explicit BarrierHolders(const Stmt &root) { visit_stmt(root); }
  bool holds(const Stmt &s) const { return holders_.count(s.get()) > 0; }

private:
  using IRVisitor::visit;
  std::vector<const IRNode *> path_;
  std::unordered_set<const IRNode *> holders_;

  template <typename Node> void enter(const Node *op) {
    path_.push_back(op);
    IRVisitor::visit(op);
    path_.pop_back();
  }
  void visit(const For *op) override { enter(op); }
  void visit(const Block *op) override { enter(op); }
  void visit(const IfThenElse *op) override { enter(op); }
  void visit(const LetStmt *op) override { enter(op); }
  void visit(const Allocate *op) override { enter(op); }
  void visit(const Evaluate *op) override { enter(op); }
  void visit(const Store *op) override { enter(op); }
  void visit(const WarpMma *op) override { enter(op); }
  void visit(const TensorCopy *op) override { enter(op); }
  void visit(const TmaStaging *op) override { enter(op); }
  void visit(const ProducerBoundary *op) override { enter(op); }
  void visit(const PipelinedStaging *op) override { enter(op); }
  void visit(const Call *op) override {
    // Up the path until a statement marked already (and so its ancestors).
    if (is_traced_operation(op))
      for (auto node = path_.rbegin(); node != path_.rend(); ++node)
        if (!holders_.insert(*node).second)
          break;
    IRVisitor::visit(op);
  }
};

class Trace {
public:
  explicit Trace(const Stmt &root) : holders_(root) {}
  PhaseTrace result;

  void run(const Stmt &s) {
    if (!result.complete || !s.defined())
      return;
    // A barrier of the block beside the barriers' operations (a Block
    // that holds them runs its parts).
    if (const auto *op = s.as<Barrier>())
      return result.events.push_back(
          PhaseEvent{PhaseEvent::Kind::BlockSync, "", op->threads, 0, producer_depth_ > 0, -1, "barrier"});
    if (!holders_.holds(s))
      return;
    if (++steps_ > kMaxSteps)
      return give_up("the trace ran past its ", kMaxSteps, " steps");
    if (const auto *op = s.as<For>())
      return run_loop(op);
    if (const auto *op = s.as<Block>()) {
      for (const Stmt &part : op->stmts)
        run(part);
      return;
    }
    if (const auto *op = s.as<IfThenElse>()) {
      auto holds = value(op->condition);
      if (!holds)
        return give_up("the condition ", to_string(op->condition), " around a barrier's operation");
      return run(*holds ? op->then_case : op->else_case);
    }
    if (const auto *op = s.as<LetStmt>()) {
      auto bound = value(op->value);
      auto saved = at_.find(op->name) == at_.end() ? std::nullopt : std::optional<int64_t>(at_[op->name]);
      if (bound)
        at_[op->name] = *bound;
      else
        at_.erase(op->name);
      run(op->body);
      if (saved)
        at_[op->name] = *saved;
      else
        at_.erase(op->name);
      return;
    }
    if (const auto *op = s.as<Allocate>())
      return run(op->body);
    if (const auto *op = s.as<Evaluate>()) {
      if (const auto *call = op->value.as<Call>(); call && is_traced_operation(call))
        return record(call, s);
      return;
    }
    give_up("a ", to_string(s).substr(0, 40), " around a barrier's operation");
  }

private:
  static constexpr int64_t kMaxSteps = 2000000;
  static constexpr int64_t kTracedTiles = 4;
  const BarrierHolders holders_;
  std::map<std::string, int64_t> at_;
  int producer_depth_ = 0;
  std::vector<std::string> warp_loops_; // the thread loops along y around the statement run
  int64_t steps_ = 0;

  template <typename... Parts> void give_up(const Parts &...parts) {
    if (!result.complete)
      return;
    result.complete = false;
    result.why = str_cat(parts...);
  }

  // Parameters take the trace's size; other unknowns stay unknown.
  std::optional<int64_t> value(const Expr &e) {
    for (const Variable *v : variables_of(e))
      if (v->variable_kind == VariableKind::Param && !at_.count(v->name))
        at_[v->name] = kPhaseTraceSize;
    return concrete_value(e, at_);
  }

  void run_loop(const For *op) {
    auto min = value(op->min), extent = value(op->extent);
    if (!min || !extent)
      return give_up("the bounds of loop '", op->name, "' around a barrier's operation");
    const bool once = op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread;
    const bool producer = op->role == LoopRole::ProducerWarps;
    const bool warps = op->for_kind == ForKind::GpuThread && op->gpu_dim == 1;
    producer_depth_ += producer;
    if (warps)
      warp_loops_.push_back(op->name);
    // A persistent block's first few tiles: a prefix of whole tiles keeps
    // every fill and wait of the tiles it holds.
    const int64_t runs = op->role == LoopRole::PersistentTiles ? std::min(*extent, kTracedTiles) : *extent;
    for (int64_t v = *min; v < *min + runs && result.complete; ++v) {
      at_[op->name] = v;
      const size_t before = result.events.size();
      run(op->body);
      // The first block; the first thread that runs a barrier's operation
      // here (the group of consumer warps that takes this tile, where
      // groups alternate).
      if (once && (op->for_kind == ForKind::GpuBlock || result.events.size() > before))
        break;
    }
    at_.erase(op->name);
    producer_depth_ -= producer;
    if (warps)
      warp_loops_.pop_back();
  }

  void record(const Call *op, const Stmt &s) {
    std::string where = to_string(s);
    while (!where.empty() && (where.back() == '\n' || where.back() == ' '))
      where.pop_back();
    while (!where.empty() && where.front() == ' ')
      where.erase(where.begin());
    const int64_t warp = warp_loops_.empty() ? -1 : at_[warp_loops_.back()];
    if (*op->intrinsic == Intrinsic::GroupBarrierSync || *op->intrinsic == Intrinsic::GroupBarrierArrive) {
      auto id = value(op->args[0]);
      if (!id)
        return give_up("the id of ", where);
      const auto kind =
          *op->intrinsic == Intrinsic::GroupBarrierSync ? PhaseEvent::Kind::GroupSync : PhaseEvent::Kind::GroupArrive;
      result.events.push_back(PhaseEvent{kind, "", *id, 0, producer_depth_ > 0, warp, where});
      return;
    }
    const auto *barrier = op->args[0].as<Load>();
    auto slot = barrier && barrier->indices.size() == 1 ? value(barrier->indices[0]) : std::nullopt;
    if (!slot)
      return give_up("the slot of ", to_string(op->args[0]));
    PhaseEvent event{PhaseEvent::Kind::Complete, barrier->buffer, *slot, 0, producer_depth_ > 0, warp, where};
    switch (*op->intrinsic) {
    case Intrinsic::MbarrierInit: event.kind = PhaseEvent::Kind::Init; break;
    case Intrinsic::MbarrierWait: {
      auto parity = value(op->args[1]);
      if (!parity)
        return give_up("the parity of ", to_string(s));
      event.kind = PhaseEvent::Kind::Wait;
      event.parity = static_cast<int>(*parity);
      break;
    }
    default: break;
    }
    result.events.push_back(std::move(event));
  }
};

} // namespace

PhaseTrace trace_pipeline_phases(const Stmt &s) {
  Trace trace(s);
  trace.run(s);
  return std::move(trace.result);
}

} // namespace coalesce
