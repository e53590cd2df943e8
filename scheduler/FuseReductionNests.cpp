#include "scheduler/FuseReductionNests.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <map>
#include <set>

namespace coalesce {

namespace {

// Whether loop `name` belongs to `func`'s update.
bool in_update(const std::string &name, const std::string &func) { return name.rfind(stage_prefix(func, 1), 0) == 0; }

bool is_update_root(const Stmt &s, const std::string &func) {
  const auto *loop = s.as<For>();
  return loop && in_update(loop->name, func);
}

[[noreturn]] void not_computed_together(const std::string &first, const std::string &second) {
  user_error("in schedule for '", second, "': fuse_reduction_with('", first, "'): '", first, "' and '", second,
             "' must be computed at the same loop of one consumer, one right after the other (fuse_epilogue or "
             "compute_at with the same loop, nothing computed between them)");
}

bool is_init(const Stmt &s, const std::string &func) {
  const auto *loop = s.as<For>();
  return loop && loop->name.rfind(stage_prefix(func, 0), 0) == 0;
}

// Whether `s` reads or writes buffer `name` (a Func's storage or call).
bool touches(const Stmt &s, const std::string &name) {
  struct Find : IRVisitor {
    const std::string &name;
    bool found = false;
    explicit Find(const std::string &n) : name(n) {}
    using IRVisitor::visit;
    void visit(const Load *op) override {
      found |= op->buffer == name;
      IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
      found |= op->call_type == CallType::Func && op->name == name;
      IRVisitor::visit(op);
    }
  } find(name);
  find.visit_stmt(s);
  return find.found;
}

// Every loop, let and variable name of `s` that starts with `from`,
// renamed to start with `to`.
Stmt rename_stage(const Stmt &s, const std::string &from, const std::string &to) {
  class Rename : public IRMutator {
  public:
    Rename(const std::string &f, const std::string &t) : from_(f), to_(t) {}

  private:
    using IRMutator::visit;
    const std::string &from_, &to_;
    std::string renamed(const std::string &name) const {
      return name.rfind(from_, 0) == 0 ? to_ + name.substr(from_.size()) : name;
    }
    Expr visit(const Variable *op, const Expr &self) override {
      if (renamed(op->name) == op->name)
        return self;
      return op->variable_kind == VariableKind::Reduction
                 ? Variable::make_reduction(renamed(op->name), op->reduction_min, op->reduction_extent)
                 : Variable::make(op->type, renamed(op->name), op->variable_kind);
    }
    Stmt visit(const For *op, const Stmt &) override {
      return For::make(renamed(op->name), mutate(op->min), mutate(op->extent), op->for_kind, mutate(op->body),
                       op->gpu_dim, op->reduction_of, op->role);
    }
    Stmt visit(const LetStmt *op, const Stmt &) override {
      return LetStmt::make(renamed(op->name), mutate(op->value), mutate(op->body));
    }
  } rename(from, to);
  return rename.mutate(s);
}

class Fuse {
  std::string first_, second_;

public:
  Fuse(std::string first, std::string second) : first_(std::move(first)), second_(std::move(second)) {}

  // The two update nests as one: loops, lets and guards equal in both
  // become one; the innermost bodies run first's then second's.
  Stmt merge(const Stmt &a, const Stmt &b, const std::string &where) const {
    const auto *la = a.as<For>(), *lb = b.as<For>();
    if (la || lb) {
      if (!la || !lb || la->name != lb->name || !equal(la->min, lb->min) || !equal(la->extent, lb->extent) ||
          la->for_kind != lb->for_kind || la->gpu_dim != lb->gpu_dim)
        differ(la ? la->name : lb->name);
      std::vector<std::string> reductions = la->reduction_of;
      for (const std::string &f : lb->reduction_of)
        if (!la->reduces(f))
          reductions.push_back(f);
      return For::make(la->name, la->min, la->extent, la->for_kind, merge(la->body, lb->body, la->name), la->gpu_dim,
                       reductions, la->role);
    }
    const auto *ta = a.as<LetStmt>(), *tb = b.as<LetStmt>();
    if (ta || tb) {
      if (!ta || !tb || ta->name != tb->name || !equal(ta->value, tb->value))
        differ(where);
      return LetStmt::make(ta->name, ta->value, merge(ta->body, tb->body, where));
    }
    const auto *ia = a.as<IfThenElse>(), *ib = b.as<IfThenElse>();
    if (ia || ib) {
      if (!ia || !ib || !equal(ia->condition, ib->condition) || ia->else_case.defined() || ib->else_case.defined())
        differ(where);
      return IfThenElse::make(ia->condition, merge(ia->then_case, ib->then_case, where));
    }
    const auto *ba = a.as<Block>(), *bb = b.as<Block>();
    if (ba || bb) {
      if (!ba || !bb || ba->stmts.size() != bb->stmts.size())
        differ(where);
      std::vector<Stmt> merged;
      for (size_t n = 0; n < ba->stmts.size(); ++n)
        merged.push_back(merge(ba->stmts[n], bb->stmts[n], where));
      return Block::make(merged);
    }
    return Block::make({a, b});
  }

  [[noreturn]] void differ(const std::string &loop) const {
    user_error("in schedule for '", second_, "': fuse_reduction_with('", first_, "'): the update loops of '", first_,
               "' and '", second_, "' differ at loop '", loop_short_name(loop),
               "' (fused reductions need the same splits, loop order and loop kinds over the same reduction domain); "
               "schedule both updates alike");
  }
};

// Finds the Block holding `first`'s update nest, followed by the Allocate
// of `second` whose body starts with `second`'s init nests and update nest,
// and moves the first update into the second: see the header.
class Place : public IRMutator {
public:
  Place(std::string first, std::string second) : first_(std::move(first)), second_(std::move(second)) {}
  bool done = false;

private:
  using IRMutator::visit;
  std::string first_, second_;

  Stmt visit(const Block *op, const Stmt &self) override {
    for (size_t n = 0; n < op->stmts.size(); ++n) {
      if (!is_update_root(op->stmts[n], first_))
        continue;
      // A split reduction whose last step may be partial has two nests: the
      // full steps, then the partial one.
      size_t end = n;
      while (end < op->stmts.size() && is_update_root(op->stmts[end], first_))
        ++end;
      const auto *alloc = end < op->stmts.size() ? op->stmts[end].as<Allocate>() : nullptr;
      if (!alloc || alloc->name != second_)
        not_adjacent();
      std::vector<Stmt> inner =
          alloc->body.as<Block>() ? alloc->body.as<Block>()->stmts : std::vector<Stmt>{alloc->body};
      size_t u = 0;
      while (u < inner.size() && is_init(inner[u], second_)) {
        if (touches(inner[u], first_))
          user_error("in schedule for '", second_, "': fuse_reduction_with('", first_, "'): the definition of '",
                     second_, "' reads '", first_, "', whose reduction the fused nest has not finished");
        ++u;
      }
      size_t u_end = u;
      while (u_end < inner.size() && is_update_root(inner[u_end], second_))
        ++u_end;
      if (u_end == u)
        not_adjacent();
      std::vector<Stmt> first_nests(op->stmts.begin() + static_cast<long>(n),
                                    op->stmts.begin() + static_cast<long>(end));
      std::vector<Stmt> second_nests(inner.begin() + static_cast<long>(u), inner.begin() + static_cast<long>(u_end));
      Stmt first_update = Block::make(first_nests), second_update = Block::make(second_nests);
      if (touches(first_update, second_) || touches(second_update, first_))
        user_error("in schedule for '", second_, "': fuse_reduction_with('", first_, "'): one of '", first_, "' and '",
                   second_,
                   "' reads the other, whose sum the fused nest has not finished; fuse only independent "
                   "reductions");
      if (first_nests.size() != second_nests.size())
        Fuse(first_, second_).differ(first_nests.front().as<For>()->name);
      Stmt renamed = rename_stage(second_update, stage_prefix(second_, 1), stage_prefix(first_, 1));
      Stmt merged = Fuse(first_, second_).merge(first_update, renamed, first_nests.front().as<For>()->name);
      inner.erase(inner.begin() + static_cast<long>(u), inner.begin() + static_cast<long>(u_end));
      inner.insert(inner.begin() + static_cast<long>(u), merged);
      std::vector<Stmt> outer(op->stmts.begin(), op->stmts.begin() + static_cast<long>(n));
      outer.push_back(Allocate::make(alloc->name, alloc->type, alloc->memory, alloc->extents, Block::make(inner),
                                     alloc->staged_input));
      outer.insert(outer.end(), op->stmts.begin() + static_cast<long>(end) + 1, op->stmts.end());
      done = true;
      return Block::make(outer);
    }
    return IRMutator::visit(op, self);
  }

  [[noreturn]] void not_adjacent() const { not_computed_together(first_, second_); }
};

// The rules that hold before any nest is looked at.
void check_schedules(const Environment &env, const FuncContents &second, const FuncContents *first) {
  const std::string &name = second.name, &other = second.schedule.fused_reduction_with;
  auto fail = [&](const std::string &why) {
    user_error("in schedule for '", name, "': fuse_reduction_with('", other, "'): ", why);
  };
  if (!first)
    fail("'" + other + "' is not computed by this pipeline");
  for (const FuncContents *f : {&second, first}) {
    if (f->updates.size() != 1)
      fail("'" + f->name + "' has " + std::to_string(f->updates.size()) + " updates; fused reductions have one each");
    for (const FuncContents &consumer : env.funcs)
      if (consumer.schedule.split_k.requested() && consumer.schedule.split_k.producer == f->name)
        fail("'" + f->name + "' is split across blocks (split_k), which fused reductions are not yet");
  }
  // One instruction for both sums: their updates are one nest, whose
  // k steps and fragments are the instruction's.
  MmaKind a = second.schedule.stages.at(1).mma.kind, b = first->schedule.stages.at(1).mma.kind;
  if (a != b)
    fail("'" + name + "' " +
         (a == MmaKind::None ? std::string("runs on FFMA") : "maps onto " + std::string(mma_kind_name(a))) + " but '" +
         other + "' " + (b == MmaKind::None ? std::string("runs on FFMA") : "onto " + std::string(mma_kind_name(b))) +
         "; fused reductions share their loops, so map both onto the same instruction (mma) or neither");
  if (first->schedule.fused_reduction_with == name)
    fail("'" + other + "' also fuses with '" + name + "'; name the fusion once");
}

} // namespace

Stmt fuse_reduction_nests(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const FuncContents &func : env.funcs) {
    if (func.schedule.fused_reduction_with.empty())
      continue;
    const FuncContents *other = env.find(func.schedule.fused_reduction_with);
    check_schedules(env, func, other);
    // Whichever update comes first in the nest moves into the second's place.
    struct FirstUpdate : IRVisitor {
      const std::string &a, &b;
      std::string seen;
      FirstUpdate(const std::string &x, const std::string &y) : a(x), b(y) {}
      using IRVisitor::visit;
      void visit(const For *op) override {
        if (seen.empty() && (in_update(op->name, a) || in_update(op->name, b)))
          seen = in_update(op->name, a) ? a : b;
        IRVisitor::visit(op);
      }
    } first_update(func.name, other->name);
    first_update.visit_stmt(result);
    const std::string &first = first_update.seen == func.name ? func.name : other->name;
    const std::string &second = first == func.name ? other->name : func.name;
    Place place(first, second);
    result = place.mutate(result);
    if (!place.done)
      not_computed_together(first, second);
  }
  return result;
}

} // namespace coalesce
