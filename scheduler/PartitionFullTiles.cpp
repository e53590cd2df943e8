#include "scheduler/PartitionFullTiles.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

namespace coalesce {

namespace {

// An integer expression as `uniform + [lo, hi]`: `uniform` (undefined for
// 0) is the same for every thread and iteration of the statement, the
// interval bounds the rest over the statement's loops.
struct Split {
  Expr uniform;
  int64_t lo = 0, hi = 0;
};

Expr plus(const Expr &a, const Expr &b) { return !a.defined() ? b : !b.defined() ? a : a + b; }

Expr with_offset(const Expr &uniform, int64_t offset, Type type) {
  Expr c = make_const(type, static_cast<double>(offset));
  return uniform.defined() ? simplify(uniform + c) : c;
}

// What a statement run by every thread binds, and whether it is
// per-element code that may be copied (see the header).
class Survey : public IRVisitor {
public:
  std::set<std::string> bound;
  bool copyable = true;

private:
  using IRVisitor::visit;
  void visit(const For *op) override {
    bound.insert(op->name);
    copyable &= as_const_int(op->min).has_value() && as_const_int(op->extent).has_value();
    IRVisitor::visit(op);
  }
  void visit(const LetStmt *op) override {
    bound.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Let *op) override {
    bound.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Allocate *) override { copyable = false; }
  void visit(const Barrier *) override { copyable = false; }
  void visit(const WarpMma *) override { copyable = false; }
  void visit(const TensorCopy *) override { copyable = false; }
  void visit(const Evaluate *) override { copyable = false; }
};

// Rewrites one statement with its provable guards dropped, collecting the
// conditions that prove them.
class DropGuards : public IRMutator {
public:
  explicit DropGuards(std::set<std::string> bound) : bound_(std::move(bound)) {}
  std::vector<Expr> conditions; ///< each uniform, together implying every dropped guard

private:
  using IRMutator::visit;
  const std::set<std::string> bound_;
  std::map<std::string, std::pair<int64_t, int64_t>> loops_;
  std::map<std::string, std::optional<Split>> lets_;

  std::optional<Split> split(const Expr &e) {
    if (!e.type().is_int())
      return std::nullopt;
    if (auto c = as_const_int(e))
      return Split{Expr(), *c, *c};
    if (uses_no_bound_name(e))
      return Split{e, 0, 0};
    if (const auto *v = e.as<Variable>()) {
      if (auto loop = loops_.find(v->name); loop != loops_.end())
        return Split{Expr(), loop->second.first, loop->second.second};
      if (auto let = lets_.find(v->name); let != lets_.end())
        return let->second;
      // A name the statement binds elsewhere would mean another variable
      // once hoisted out of it.
      if (bound_.count(v->name))
        return std::nullopt;
      return Split{e, 0, 0};
    }
    if (const auto *add = e.as<Add>()) {
      auto a = split(add->a), b = split(add->b);
      if (!a || !b)
        return std::nullopt;
      return Split{plus(a->uniform, b->uniform), a->lo + b->lo, a->hi + b->hi};
    }
    if (const auto *sub = e.as<Sub>()) {
      auto a = split(sub->a), b = split(sub->b);
      if (!a || !b)
        return std::nullopt;
      Expr uniform = !b->uniform.defined() ? a->uniform : plus(a->uniform, -b->uniform);
      return Split{uniform, a->lo - b->hi, a->hi - b->lo};
    }
    if (const auto *mul = e.as<Mul>()) {
      bool constant_first = as_const_int(mul->a).has_value();
      Expr factor = constant_first ? mul->a : mul->b;
      auto a = split(constant_first ? mul->b : mul->a);
      auto c = as_const_int(factor);
      if (!a || !c)
        return std::nullopt;
      int64_t x = a->lo * *c, y = a->hi * *c;
      return Split{a->uniform.defined() ? a->uniform * factor : Expr(), std::min(x, y), std::max(x, y)};
    }
    if (e.as<Div>() || e.as<Mod>()) {
      bool is_div = e.as<Div>() != nullptr;
      Expr operand = is_div ? e.as<Div>()->a : e.as<Mod>()->a;
      Expr divisor = is_div ? e.as<Div>()->b : e.as<Mod>()->b;
      auto c = as_const_int(divisor);
      auto a = split(operand);
      if (!a || !c || *c <= 0)
        return std::nullopt;
      if (a->uniform.defined()) { // exact only when nothing varies
        if (a->lo != 0 || a->hi != 0)
          return std::nullopt;
        return Split{is_div ? a->uniform / divisor : a->uniform % divisor, 0, 0};
      }
      if (is_div) // truncation is monotonic
        return Split{Expr(), a->lo / *c, a->hi / *c};
      if (a->lo >= 0 && a->hi < *c)
        return Split{Expr(), a->lo, a->hi};
      return Split{Expr(), a->lo >= 0 ? 0 : -(*c - 1), *c - 1};
    }
    return std::nullopt;
  }

  bool uses_no_bound_name(const Expr &e) const {
    class Uses : public IRVisitor {
    public:
      explicit Uses(const std::set<std::string> &names) : names_(names) {}
      bool found = false;

    private:
      using IRVisitor::visit;
      const std::set<std::string> &names_;
      void visit(const Variable *op) override { found |= names_.count(op->name) > 0; }
    } uses(bound_);
    uses.visit_expr(e);
    return !uses.found;
  }

  // A uniform condition implying `condition` for every thread, or nothing.
  std::optional<Expr> uniform_bound(const Expr &condition) {
    if (const auto *both = condition.as<And>()) {
      auto a = uniform_bound(both->a), b = uniform_bound(both->b);
      if (!a || !b)
        return std::nullopt;
      return *a && *b;
    }
    // a < b (strict) or a <= b, written as small < large.
    Expr small, large;
    bool strict = false;
    if (const auto *op = condition.as<LT>())
      small = op->a, large = op->b, strict = true;
    else if (const auto *op = condition.as<LE>())
      small = op->a, large = op->b;
    else if (const auto *op = condition.as<GT>())
      small = op->b, large = op->a, strict = true;
    else if (const auto *op = condition.as<GE>())
      small = op->b, large = op->a;
    else
      return std::nullopt;
    auto s = split(small), l = split(large);
    if (!s || !l)
      return std::nullopt;
    Type type = small.type();
    Expr worst_small = with_offset(s->uniform, s->hi, type), worst_large = with_offset(l->uniform, l->lo, type);
    return simplify(strict ? worst_small < worst_large : worst_small <= worst_large);
  }

  Stmt visit(const For *op, const Stmt &self) override {
    int64_t min = *as_const_int(op->min), extent = *as_const_int(op->extent);
    if (extent <= 0)
      return self;
    loops_[op->name] = {min, min + extent - 1};
    Stmt result = IRMutator::visit(op, self);
    loops_.erase(op->name);
    return result;
  }

  Stmt visit(const LetStmt *op, const Stmt &self) override {
    lets_[op->name] = split(op->value);
    Stmt result = IRMutator::visit(op, self);
    lets_.erase(op->name);
    return result;
  }

  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    std::optional<Expr> bound = uniform_bound(op->condition);
    if (!bound || as_const_int(*bound) == std::optional<int64_t>(0))
      return IRMutator::visit(op, self);
    bool known = false;
    for (const Expr &c : conditions)
      known |= equal(c, *bound);
    if (!known && !as_const_int(*bound))
      conditions.push_back(*bound);
    return mutate(op->then_case);
  }
};

class Partition : public IRMutator {
private:
  using IRMutator::visit;
  int enclosing_loops_ = 0; ///< loops around this point other than the block loops
  Stmt visit(const For *op, const Stmt &self) override {
    // A persistent block's tile loop runs its body once per tile, as a
    // block loop does.
    if (op->for_kind == ForKind::GpuBlock || op->role == LoopRole::PersistentTiles)
      return IRMutator::visit(op, self);
    if (op->for_kind != ForKind::GpuThread) {
      ++enclosing_loops_;
      Stmt result = IRMutator::visit(op, self);
      --enclosing_loops_;
      return result;
    }
    // The outermost thread loop: a statement every thread of the block
    // runs. Inside another loop (a k step's guard on the last, partial
    // step) a copy would double the loop's body for one iteration's sake.
    if (enclosing_loops_ > 0)
      return self;
    Survey survey;
    survey.visit_stmt(self);
    if (!survey.copyable)
      return self;
    DropGuards drop(survey.bound);
    Stmt unguarded = drop.mutate(self);
    if (drop.conditions.empty())
      return self;
    Expr whole = drop.conditions.front();
    for (size_t i = 1; i < drop.conditions.size(); ++i)
      whole = whole && drop.conditions[i];
    return IfThenElse::make(whole, unguarded, self);
  }
};

} // namespace

Stmt partition_full_tiles(const Stmt &s, const Environment &env) {
  if (!env.output().schedule.partition_full_tiles.value_or(true))
    return s;
  return partition_full_tiles(s);
}

Stmt partition_full_tiles(const Stmt &s) { return Partition().mutate(s); }

} // namespace coalesce
