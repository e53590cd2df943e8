#include "scheduler/HoistConsumerGroupGuards.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Substitute.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

namespace {

// Whether every statement `s` runs is inside an `if g` (lets, allocations,
// blocks, loops and other ifs around them allowed).
bool all_guarded(const Stmt &s, const Expr &g) {
  if (!s.defined())
    return true;
  if (const auto *op = s.as<IfThenElse>()) {
    if (!op->else_case.defined() && equal(op->condition, g))
      return true;
    return all_guarded(op->then_case, g) && all_guarded(op->else_case, g);
  }
  if (const auto *op = s.as<Block>())
    return std::all_of(op->stmts.begin(), op->stmts.end(), [&](const Stmt &c) { return all_guarded(c, g); });
  if (const auto *op = s.as<LetStmt>())
    return all_guarded(op->body, g);
  if (const auto *op = s.as<For>())
    return all_guarded(op->body, g);
  // A warpgroup's wait for its own MMAs: nothing in flight for a group
  // without this tile, so the same inside the guard.
  if (const auto *op = s.as<Evaluate>())
    if (const auto *call = op->value.as<Call>(); call && call->intrinsic == Intrinsic::WgmmaWait)
      return true;
  return false;
}

class StripGuard : public IRMutator {
public:
  explicit StripGuard(Expr g) : g_(std::move(g)) {}

private:
  using IRMutator::visit;
  Expr g_;
  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    if (!op->else_case.defined() && equal(op->condition, g_))
      return mutate(op->then_case);
    return IRMutator::visit(op, self);
  }
};

// The first group guard (`x / W == tile % 2`) under `s`, and the same with
// the lets it reads (the thread's index) substituted.
struct GroupGuard {
  Expr as_written, closed;
};
std::optional<GroupGuard> first_group_guard(const Stmt &s, const std::string &tile) {
  struct Find : IRVisitor {
    const std::string &tile;
    std::map<std::string, Expr> lets;
    std::optional<GroupGuard> found;
    explicit Find(const std::string &t) : tile(t) {}
    using IRVisitor::visit;
    void visit(const LetStmt *op) override {
      lets[op->name] = op->value;
      IRVisitor::visit(op);
    }
    void visit(const IfThenElse *op) override {
      if (!found)
        if (const auto *eq = op->condition.as<EQ>())
          if (const auto *mod = eq->b.as<Mod>())
            if (const auto *v = mod->a.as<Variable>(); v && v->name == tile && is_const(mod->b, 2))
              found = GroupGuard{op->condition, substitute(lets, op->condition)};
      IRVisitor::visit(op);
    }
  } find(tile);
  find.visit_stmt(s);
  return find.found;
}

// Through the lets and allocations that open the tile loop's body, the
// rest under one `if g`.
Stmt wrap(const Stmt &s, const GroupGuard &g) {
  if (const auto *op = s.as<LetStmt>())
    return LetStmt::make(op->name, op->value, wrap(op->body, g));
  if (const auto *op = s.as<Allocate>())
    return Allocate::make(op->name, op->type, op->memory, op->extents, wrap(op->body, g), op->staged_input);
  if (!all_guarded(s, g.as_written))
    return s;
  return IfThenElse::make(g.closed, StripGuard(g.as_written).mutate(s));
}

// Down the statements that hold loops (not into the statements and
// expressions that compute: a default kernel's unrolled body is large, and
// this pass has nothing to do in most kernels) to the persistent tile loops.
Stmt hoist(const Stmt &s) {
  if (const auto *op = s.as<For>()) {
    if (op->role == LoopRole::PersistentTiles)
      if (std::optional<GroupGuard> g = first_group_guard(op->body, op->name))
        return For::make(op->name, op->min, op->extent, op->for_kind, wrap(op->body, *g), op->gpu_dim, op->reduction_of,
                         op->role);
    Stmt body = hoist(op->body);
    return body.same_as(op->body)
               ? s
               : For::make(op->name, op->min, op->extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
  }
  if (const auto *op = s.as<LetStmt>()) {
    Stmt body = hoist(op->body);
    return body.same_as(op->body) ? s : LetStmt::make(op->name, op->value, body);
  }
  if (const auto *op = s.as<Allocate>()) {
    Stmt body = hoist(op->body);
    return body.same_as(op->body) ? s
                                  : Allocate::make(op->name, op->type, op->memory, op->extents, body, op->staged_input);
  }
  if (const auto *op = s.as<IfThenElse>()) {
    Stmt then_case = hoist(op->then_case);
    Stmt else_case = op->else_case.defined() ? hoist(op->else_case) : op->else_case;
    return then_case.same_as(op->then_case) && else_case.same_as(op->else_case)
               ? s
               : IfThenElse::make(op->condition, then_case, else_case);
  }
  if (const auto *op = s.as<Block>()) {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt &part : op->stmts) {
      stmts.push_back(hoist(part));
      changed |= !stmts.back().same_as(part);
    }
    return changed ? Block::make(stmts) : s;
  }
  return s;
}

} // namespace

Stmt hoist_consumer_group_guards(const Stmt &kernel) { return hoist(kernel); }

} // namespace coalesce
