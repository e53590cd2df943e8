#include "scheduler/HoistLoads.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <map>
#include <optional>
#include <set>

namespace coalesce {

namespace {

class CollectLoads : public IRVisitor {
public:
  std::vector<Expr> loads; // in evaluation order

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    IRVisitor::visit(op);
    loads.push_back(Load::make(op->type, op->buffer, op->indices));
  }
  void visit(const Call *op) override {
    // A copy's source is read by the copy itself, not by a register.
    if (op->intrinsic != Intrinsic::AsyncLoad && op->intrinsic != Intrinsic::AsyncLoadVector &&
        op->intrinsic != Intrinsic::LoadVector)
      IRVisitor::visit(op);
  }
};

// The hoisted loads of one run, found by structure. Kept in buckets by
// buffer and the index's constant term (a run of the unrolled GEMM body
// reads a few hundred loads, mostly base + c for a handful of bases), so a
// lookup compares a few loads, not all of them.
struct HoistedLoads {
  using Bucket = std::vector<std::pair<Expr, Expr>>; // (load, its variable)
  std::map<std::pair<std::string, int64_t>, Bucket> buckets;
  static std::pair<std::string, int64_t> bucket_of(const Expr &load) {
    const auto *node = load.as<Load>();
    int64_t offset = 0;
    if (node->indices.size() == 1) {
      const Expr &index = node->indices[0];
      const auto *sum = index.as<Add>();
      std::optional<int64_t> constant = sum ? as_const_int(sum->b) : as_const_int(index);
      offset = constant.value_or(0);
    }
    return {node->buffer, offset};
  }
  const Expr *find(const Expr &load) const {
    auto bucket = buckets.find(bucket_of(load));
    if (bucket == buckets.end())
      return nullptr;
    for (const auto &[hoisted, variable] : bucket->second)
      if (equal(hoisted, load))
        return &variable;
    return nullptr;
  }
  void add(const Expr &load, const Expr &variable) { buckets[bucket_of(load)].emplace_back(load, variable); }
};

class ReplaceLoads : public IRMutator {
public:
  explicit ReplaceLoads(const HoistedLoads &names) : names_(names) {}

private:
  using IRMutator::visit;
  Expr visit(const Load *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const Expr *variable = names_.find(e);
    return variable ? *variable : e;
  }
  const HoistedLoads &names_;
};

class Hoist : public IRMutator {
public:
  explicit Hoist(int lookahead) : lookahead_(lookahead) {}

private:
  using IRMutator::visit;
  int lookahead_;
  int counter_ = 0;

  // One straight run of stores.
  std::vector<Stmt> hoist_run(const std::vector<Stmt> &run) {
    std::set<std::string> written;
    for (const Stmt &s : run)
      written.insert(s.as<Store>()->buffer);
    HoistedLoads names;
    std::vector<std::vector<std::pair<std::string, Expr>>> lets(run.size()); // lets to emit before stmt p
    for (size_t p = 0; p < run.size(); ++p) {
      CollectLoads loads;
      loads.visit_expr(run[p].as<Store>()->value);
      for (const Expr &load : loads.loads) {
        const auto *node = load.as<Load>();
        if (written.count(node->buffer))
          continue;
        if (names.find(load))
          continue;
        // Qualified like every name the compiler makes ("hoisted.A_v0",
        // printed A_v0): a user name has no '.', so a Param called A_v0
        // read further down the run is not captured by the let, and
        // strip_stage_prefixes prints the let under a name that hides it.
        std::string name = "hoisted." + node->buffer + "_v" + std::to_string(counter_++);
        names.add(load, Variable::make(load.type(), name));
        size_t at = p > static_cast<size_t>(lookahead_) ? p - lookahead_ : 0;
        lets[at].emplace_back(name, load);
      }
    }
    if (names.buckets.empty())
      return run;
    // Build from the end so that each let's body is the rest of the run.
    ReplaceLoads replace(names);
    Stmt rest;
    for (size_t p = run.size(); p-- > 0;) {
      rest = Block::make({replace.mutate(run[p]), rest});
      for (auto let = lets[p].rbegin(); let != lets[p].rend(); ++let)
        rest = LetStmt::make(let->first, let->second, rest);
    }
    return {rest};
  }

  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> result, run;
    auto flush = [&] {
      if (run.size() > 1) {
        for (const Stmt &s : hoist_run(run))
          result.push_back(s);
      } else {
        result.insert(result.end(), run.begin(), run.end());
      }
      run.clear();
    };
    for (const Stmt &s : op->stmts) {
      if (s.as<Store>()) {
        run.push_back(s);
        continue;
      }
      flush();
      result.push_back(mutate(s));
    }
    flush();
    return Block::make(result);
  }
};

} // namespace

Stmt hoist_loads(const Stmt &s, int lookahead) { return Hoist(lookahead).mutate(s); }

} // namespace coalesce
