#include "scheduler/PartitionFullTiles.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"
#include "scheduler/UniformRanges.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace coalesce {

namespace {

// Values a thread computes once at most (its register array's elements):
// more would not be per-element code of one tile.
constexpr int64_t kMaxValuesOnce = 256;

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

// The one store of per-element code, found with the loops around it (inside
// the thread loops), for the form that computes the stored values once.
struct LoneStore {
  const Store *store = nullptr;
  int stores = 0;
  bool guarded = false; ///< an IfThenElse left in the code
  std::vector<const For *> loops;
};

LoneStore find_lone_store(const Stmt &s) {
  struct Find : IRVisitor {
    LoneStore found;
    std::vector<const For *> loops;
    using IRVisitor::visit;
    void visit(const For *op) override {
      loops.push_back(op);
      IRVisitor::visit(op);
      loops.pop_back();
    }
    void visit(const IfThenElse *op) override {
      found.guarded = true;
      IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
      if (++found.stores == 1) {
        found.store = op;
        found.loops = loops;
      }
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.found;
}

// Whether `value` may be computed at every point of a tile, the points past
// the output's edge included: it reads only registers and inputs (whose
// loads clamp_input_loads keeps inside them), calls only pure functions,
// and divides integers by nothing that could be zero.
bool safe_past_the_edge(const Expr &value, const std::set<std::string> &readable) {
  struct Check : IRVisitor {
    const std::set<std::string> &readable;
    bool safe = true;
    explicit Check(const std::set<std::string> &r) : readable(r) {}
    using IRVisitor::visit;
    void visit(const Load *op) override {
      safe &= readable.count(op->buffer) > 0;
      IRVisitor::visit(op);
    }
    // Pure functions only: an atomic add (split-K's) or a copy is the
    // store's own effect, never to be made where the guard fails.
    void visit(const Call *op) override {
      safe &= op->call_type == CallType::Intrinsic &&
              (is_math_intrinsic(*op->intrinsic) || *op->intrinsic == Intrinsic::RoundToTf32);
      IRVisitor::visit(op);
    }
    void visit(const Div *op) override {
      safe &= op->type.is_float() || as_const_int(op->b).value_or(0) != 0;
      IRVisitor::visit(op);
    }
    void visit(const Mod *op) override {
      safe &= op->type.is_float() || as_const_int(op->b).value_or(0) != 0;
      IRVisitor::visit(op);
    }
  } check(readable);
  check.visit_expr(value);
  return check.safe;
}

// `s` with its one store's value replaced.
Stmt replace_stored_value(const Stmt &s, const std::function<Stmt(const Store *)> &replace) {
  struct Replace : IRMutator {
    const std::function<Stmt(const Store *)> &replace;
    explicit Replace(const std::function<Stmt(const Store *)> &r) : replace(r) {}
    using IRMutator::visit;
    Stmt visit(const Store *op, const Stmt &) override { return replace(op); }
  } mutator(replace);
  return mutator.mutate(s);
}

class Partition : public IRMutator {
public:
  /// `readable`: the inputs, whose loads are clamped.
  Partition(bool share_values, std::set<std::string> readable)
      : share_values_(share_values), readable_(std::move(readable)) {}

private:
  using IRMutator::visit;
  const bool share_values_;
  std::set<std::string> readable_; ///< the inputs, and the register arrays in scope
  int enclosing_loops_ = 0;        ///< loops around this point other than the block loops

  Stmt visit(const Allocate *op, const Stmt &self) override {
    if (op->memory != MemoryType::Register || readable_.count(op->name))
      return IRMutator::visit(op, self);
    readable_.insert(op->name);
    Stmt result = IRMutator::visit(op, self);
    readable_.erase(op->name);
    return result;
  }

  // The values computed once, for every point of the tile (guards dropped),
  // into a register array; then the stores, without guards where the whole
  // tile is inside and with them elsewhere:
  //
  //   for ti, tj in gpu_thread:
  //     allocate out.values[2][4][2][4] in register
  //     for hi, ri, hj, rj: out.values[hi, ri, hj, rj] = value
  //     if whole: for hi, ri, hj, rj: out[i, j] = out.values[hi, ri, hj, rj]
  //     else:     (the guarded stores of the same)
  //
  // Nothing when the code has more than one store, a guard DropGuards kept,
  // a value that is a plain load, or one that is not safe past the edge.
  std::optional<Stmt> with_values_once(const Stmt &guarded, const Stmt &unguarded, const Expr &whole) {
    // The thread loops and the lets between them, around both copies alike
    // (DropGuards drops only guards).
    std::vector<Stmt> around;
    Stmt guarded_body = guarded, unguarded_body = unguarded;
    for (;;) {
      if (const auto *loop = guarded_body.as<For>(); loop && loop->for_kind == ForKind::GpuThread) {
        const auto *copy = unguarded_body.as<For>();
        COALESCE_INTERNAL_ASSERT(copy && copy->name == loop->name, "the unguarded copy lost the thread loop ",
                                 loop->name);
        around.push_back(guarded_body);
        guarded_body = loop->body;
        unguarded_body = copy->body;
      } else if (const auto *let = guarded_body.as<LetStmt>()) {
        const auto *copy = unguarded_body.as<LetStmt>();
        COALESCE_INTERNAL_ASSERT(copy && copy->name == let->name, "the unguarded copy lost the let ", let->name);
        around.push_back(guarded_body);
        guarded_body = let->body;
        unguarded_body = copy->body;
      } else {
        break;
      }
    }
    // The outermost loop over the thread's elements: the values are
    // computed and stored one of its iterations at a time, so that they
    // take no more registers than its body's elements.
    const auto *chunk = guarded_body.as<For>(), *chunk_copy = unguarded_body.as<For>();
    if (!chunk || !chunk_copy || chunk->name != chunk_copy->name || !as_const_int(chunk->extent))
      return std::nullopt;
    around.push_back(guarded_body);
    guarded_body = chunk->body;
    unguarded_body = chunk_copy->body;
    LoneStore lone = find_lone_store(unguarded_body);
    if (lone.stores != 1 || lone.guarded)
      return std::nullopt;
    for (const For *loop : lone.loops)
      if (loop->for_kind == ForKind::GpuThread || loop->for_kind == ForKind::GpuBlock)
        return std::nullopt;
    const Expr &value = lone.store->value;
    if (value.as<Load>() || value.as<Variable>() || value.as<IntImm>() || value.as<FloatImm>() || !safe_past_the_edge(value, readable_))
      return std::nullopt;
    std::vector<Expr> extents, element;
    int64_t elements = 1;
    for (const For *loop : lone.loops) {
      int64_t extent = *as_const_int(loop->extent);
      extents.push_back(Expr(static_cast<int>(extent)));
      element.push_back(simplify(Variable::make(Int(32), loop->name) - loop->min));
      elements *= std::max<int64_t>(extent, 1);
    }
    if (elements > kMaxValuesOnce || elements * *as_const_int(chunk->extent) < 2)
      return std::nullopt;
    const std::string values = lone.store->buffer + ".values";
    Type type = value.type();
    Stmt compute = replace_stored_value(unguarded_body, [&](const Store *op) {
      return Store::make(values, element, op->value);
    });
    auto store_from_values = [&](const Store *op) {
      return Store::make(op->buffer, op->indices, Load::make(type, values, element));
    };
    Stmt stores = IfThenElse::make(whole, replace_stored_value(unguarded_body, store_from_values),
                                   replace_stored_value(guarded_body, store_from_values));
    Stmt body = Allocate::make(values, type, MemoryType::Register, extents, Block::make({compute, stores}));
    for (size_t a = around.size(); a-- > 0;) {
      if (const auto *loop = around[a].as<For>())
        body = For::make(loop->name, loop->min, loop->extent, loop->for_kind, body, loop->gpu_dim, loop->reduction_of,
                         loop->role);
      else if (const auto *let = around[a].as<LetStmt>())
        body = LetStmt::make(let->name, let->value, body);
    }
    return body;
  }

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
    if (share_values_)
      if (std::optional<Stmt> once = with_values_once(self, unguarded, whole))
        return *once;
    return IfThenElse::make(whole, unguarded, self);
  }
};

} // namespace

Stmt partition_full_tiles(const Stmt &s, const Environment &env) {
  if (!env.output().schedule.partition_full_tiles.value_or(true))
    return s;
  // Stores through shared memory: stage_output_tiles takes the full-tile
  // copy's stores and drops the guarded copy's values itself.
  bool share_values = env.output().schedule.tile_stores == TileStores::Direct;
  std::set<std::string> inputs;
  for (const auto &[name, input] : env.inputs)
    inputs.insert(name);
  return Partition(share_values, std::move(inputs)).mutate(s);
}

Stmt partition_full_tiles(const Stmt &s) { return Partition(false, {}).mutate(s); }

} // namespace coalesce
