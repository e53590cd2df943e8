#include "scheduler/UniformRanges.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <algorithm>

namespace coalesce {

namespace {

Expr plus(const Expr &a, const Expr &b) { return !a.defined() ? b : !b.defined() ? a : a + b; }

} // namespace

std::set<std::string> names_bound_in(const Stmt &s) {
  struct Collect : IRVisitor {
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const For *op) override {
      names.insert(op->name);
      IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
      names.insert(op->name);
      IRVisitor::visit(op);
    }
    void visit(const Let *op) override {
      names.insert(op->name);
      IRVisitor::visit(op);
    }
  } collect;
  collect.visit_stmt(s);
  return collect.names;
}

bool is_per_element_code(const Stmt &s) {
  struct Check : IRVisitor {
    bool per_element = true;
    using IRVisitor::visit;
    void visit(const For *op) override {
      per_element &= as_const_int(op->min).has_value() && as_const_int(op->extent).has_value();
      IRVisitor::visit(op);
    }
    void visit(const Allocate *) override { per_element = false; }
    void visit(const Barrier *) override { per_element = false; }
    void visit(const WarpMma *) override { per_element = false; }
    void visit(const TensorCopy *) override { per_element = false; }
    void visit(const Evaluate *) override { per_element = false; }
  } check;
  check.visit_stmt(s);
  return check.per_element;
}

bool UniformRanges::uses_no_bound_name(const Expr &e) const {
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

std::optional<UniformRange> UniformRanges::of(const Expr &e) const {
  if (!e.type().is_int())
    return std::nullopt;
  if (auto c = as_const_int(e))
    return UniformRange{Expr(), *c, *c};
  if (uses_no_bound_name(e))
    return UniformRange{e, 0, 0};
  if (const auto *v = e.as<Variable>()) {
    if (auto loop = loops_.find(v->name); loop != loops_.end())
      return UniformRange{Expr(), loop->second.first, loop->second.second};
    if (auto let = lets_.find(v->name); let != lets_.end())
      return let->second;
    // A name the statement binds elsewhere would mean another variable
    // once hoisted out of it.
    if (bound_.count(v->name))
      return std::nullopt;
    return UniformRange{e, 0, 0};
  }
  if (const auto *add = e.as<Add>()) {
    auto a = of(add->a), b = of(add->b);
    if (!a || !b)
      return std::nullopt;
    return UniformRange{plus(a->uniform, b->uniform), a->lo + b->lo, a->hi + b->hi};
  }
  if (const auto *sub = e.as<Sub>()) {
    auto a = of(sub->a), b = of(sub->b);
    if (!a || !b)
      return std::nullopt;
    Expr uniform = !b->uniform.defined() ? a->uniform : plus(a->uniform, -b->uniform);
    return UniformRange{uniform, a->lo - b->hi, a->hi - b->lo};
  }
  if (const auto *mul = e.as<Mul>()) {
    bool constant_first = as_const_int(mul->a).has_value();
    Expr factor = constant_first ? mul->a : mul->b;
    auto a = of(constant_first ? mul->b : mul->a);
    auto c = as_const_int(factor);
    if (!a || !c)
      return std::nullopt;
    int64_t x = a->lo * *c, y = a->hi * *c;
    return UniformRange{a->uniform.defined() ? a->uniform * factor : Expr(), std::min(x, y), std::max(x, y)};
  }
  if (e.as<Div>() || e.as<Mod>()) {
    bool is_div = e.as<Div>() != nullptr;
    Expr operand = is_div ? e.as<Div>()->a : e.as<Mod>()->a;
    Expr divisor = is_div ? e.as<Div>()->b : e.as<Mod>()->b;
    auto c = as_const_int(divisor);
    auto a = of(operand);
    if (!a || !c || *c <= 0)
      return std::nullopt;
    if (a->uniform.defined()) { // exact only when nothing varies
      if (a->lo != 0 || a->hi != 0)
        return std::nullopt;
      return UniformRange{is_div ? a->uniform / divisor : a->uniform % divisor, 0, 0};
    }
    if (is_div) // truncation is monotonic
      return UniformRange{Expr(), a->lo / *c, a->hi / *c};
    if (a->lo >= 0 && a->hi < *c)
      return UniformRange{Expr(), a->lo, a->hi};
    return UniformRange{Expr(), a->lo >= 0 ? 0 : -(*c - 1), *c - 1};
  }
  return std::nullopt;
}

Stmt UniformRangesMutator::visit(const For *op, const Stmt &self) {
  int64_t min = *as_const_int(op->min), extent = *as_const_int(op->extent);
  if (extent <= 0)
    return self;
  ranges_.enter_loop(op->name, min, min + extent - 1);
  Stmt result = IRMutator::visit(op, self);
  ranges_.leave_loop(op->name);
  return result;
}

Stmt UniformRangesMutator::visit(const LetStmt *op, const Stmt &self) {
  ranges_.enter_let(op->name, op->value);
  Stmt result = IRMutator::visit(op, self);
  ranges_.leave_let(op->name);
  return result;
}

} // namespace coalesce
