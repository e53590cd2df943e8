#include "scheduler/PartitionFullTiles.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"
#include "scheduler/UniformRanges.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

namespace coalesce {

namespace {

Expr with_offset(const Expr &uniform, int64_t offset, Type type) {
  Expr c = make_const(type, static_cast<double>(offset));
  return uniform.defined() ? simplify(uniform + c) : c;
}

// Rewrites one statement with its provable guards dropped, collecting the
// conditions that prove them.
class DropGuards : public UniformRangesMutator {
public:
  explicit DropGuards(std::set<std::string> bound) : UniformRangesMutator(std::move(bound)) {}
  std::vector<Expr> conditions; ///< each uniform, together implying every dropped guard

private:
  using UniformRangesMutator::visit;

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
    auto s = ranges().of(small), l = ranges().of(large);
    if (!s || !l)
      return std::nullopt;
    Type type = small.type();
    Expr worst_small = with_offset(s->uniform, s->hi, type), worst_large = with_offset(l->uniform, l->lo, type);
    return simplify(strict ? worst_small < worst_large : worst_small <= worst_large);
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
    // block loop does; the split-K combine's slice loop runs the tile's
    // per-element code once per slice, each time under the same guards.
    if (op->for_kind == ForKind::GpuBlock || op->role == LoopRole::PersistentTiles || op->role == LoopRole::SliceSum)
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
    if (!is_per_element_code(self))
      return self;
    DropGuards drop(names_bound_in(self));
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
