#include "scheduler/Simplify.h"

#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Substitute.h"

#include <vector>

namespace coalesce {

namespace {

// An i32 expression as a sum of terms times constant coefficients plus a
// constant, so that additions and subtractions cancel.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms; // (term, coefficient), in first-use order
  int64_t constant = 0;

  void add(const Expr &term, int64_t coefficient) {
    for (auto &[existing, c] : terms)
      if (equal(existing, term)) {
        c += coefficient;
        return;
      }
    terms.emplace_back(term, coefficient);
  }
};

void linearize(const Expr &e, int64_t scale, Linear &out) {
  if (auto c = as_const_int(e)) {
    out.constant += scale * *c;
    return;
  }
  if (const auto *add = e.as<Add>()) {
    linearize(add->a, scale, out);
    linearize(add->b, scale, out);
    return;
  }
  if (const auto *sub = e.as<Sub>()) {
    linearize(sub->a, scale, out);
    linearize(sub->b, -scale, out);
    return;
  }
  if (const auto *mul = e.as<Mul>()) {
    if (auto c = as_const_int(mul->b)) {
      linearize(mul->a, scale * *c, out);
      return;
    }
    if (auto c = as_const_int(mul->a)) {
      linearize(mul->b, scale * *c, out);
      return;
    }
  }
  out.add(e, scale);
}

Expr rebuild(const Linear &linear) {
  Expr sum;
  for (const auto &[term, coefficient] : linear.terms) {
    if (coefficient == 0)
      continue;
    Expr scaled = coefficient == 1 || coefficient == -1 ? term : Mul::make(term, IntImm::make(Int(32), std::llabs(coefficient)));
    if (!sum.defined())
      sum = coefficient < 0 ? Sub::make(IntImm::make(Int(32), 0), scaled) : scaled;
    else
      sum = coefficient < 0 ? Sub::make(sum, scaled) : Add::make(sum, scaled);
  }
  if (!sum.defined())
    return IntImm::make(Int(32), linear.constant);
  if (linear.constant > 0)
    return Add::make(sum, IntImm::make(Int(32), linear.constant));
  if (linear.constant < 0)
    return Sub::make(sum, IntImm::make(Int(32), -linear.constant));
  return sum;
}

Expr make_bool(bool value) { return IntImm::make(Bool(), value); }

class Simplifier : public IRMutator {
  using IRMutator::visit;

  Expr linear(const Expr &e) {
    Linear form;
    linearize(e, 1, form);
    return rebuild(form);
  }
  Expr visit(const Add *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    return e.type() == Int(32) ? linear(e) : e;
  }
  Expr visit(const Sub *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    return e.type() == Int(32) ? linear(e) : e;
  }
  Expr visit(const Mul *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    return e.type() == Int(32) ? linear(e) : e;
  }
  Expr visit(const Div *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *div = e.as<Div>();
    auto a = as_const_int(div->a), b = as_const_int(div->b);
    if (a && b && *b != 0 && e.type().is_int())
      return IntImm::make(e.type(), *a / *b);
    if (b && *b == 1 && e.type().is_int())
      return div->a;
    return e;
  }
  Expr visit(const Mod *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *mod = e.as<Mod>();
    auto a = as_const_int(mod->a), b = as_const_int(mod->b);
    if (a && b && *b != 0 && e.type().is_int())
      return IntImm::make(e.type(), *a % *b);
    return e;
  }
  template <typename Node, typename Fold> Expr fold_int(const Node *op, const Expr &self, Fold fold) {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.template as<Node>();
    auto a = as_const_int(node->a), b = as_const_int(node->b);
    if (a && b && node->a.type().is_int())
      return fold(*a, *b);
    return e;
  }
  Expr visit(const Min *op, const Expr &self) override {
    return fold_int(op, self, [](int64_t a, int64_t b) { return IntImm::make(Int(32), std::min(a, b)); });
  }
  Expr visit(const Max *op, const Expr &self) override {
    return fold_int(op, self, [](int64_t a, int64_t b) { return IntImm::make(Int(32), std::max(a, b)); });
  }
  // Comparisons of i32 values fold when the difference is a constant.
  template <typename Node, typename Test> Expr compare(const Node *op, const Expr &self, Test test) {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.template as<Node>();
    if (!node || node->a.type() != Int(32))
      return e;
    if (auto diff = as_const_int(linear(Sub::make(node->a, node->b))))
      return make_bool(test(*diff));
    return e;
  }
  Expr visit(const LT *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d < 0; }); }
  Expr visit(const LE *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d <= 0; }); }
  Expr visit(const GT *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d > 0; }); }
  Expr visit(const GE *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d >= 0; }); }
  Expr visit(const EQ *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d == 0; }); }
  Expr visit(const NE *op, const Expr &self) override { return compare(op, self, [](int64_t d) { return d != 0; }); }
  Expr visit(const And *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.as<And>();
    if (auto a = as_const_int(node->a))
      return *a ? node->b : node->a;
    if (auto b = as_const_int(node->b))
      return *b ? node->a : node->b;
    return e;
  }
  Expr visit(const Or *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.as<Or>();
    if (auto a = as_const_int(node->a))
      return *a ? node->a : node->b;
    if (auto b = as_const_int(node->b))
      return *b ? node->b : node->a;
    return e;
  }
  Expr visit(const Not *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    if (auto a = as_const_int(e.as<Not>()->a))
      return make_bool(!*a);
    return e;
  }
  Expr visit(const Call *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *call = e.as<Call>();
    if (call && call->intrinsic == Intrinsic::BitXor) {
      // Unrolled copies index swizzled tiles with constants.
      auto a = as_const_int(call->args[0]), b = as_const_int(call->args[1]);
      if (a && b)
        return Expr(static_cast<int>(*a ^ *b));
      if ((a && *a == 0) || (b && *b == 0))
        return a ? call->args[1] : call->args[0];
    }
    return e;
  }
  Expr visit(const Select *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.as<Select>();
    if (auto c = as_const_int(node->condition))
      return *c ? node->true_value : node->false_value;
    return e;
  }
  Expr visit(const Cast *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *node = e.as<Cast>();
    if (node && node->value.type() == node->type)
      return node->value;
    return e;
  }

  Stmt visit(const Block *op, const Stmt &self) override {
    // One barrier is as good as two in a row.
    std::vector<Stmt> stmts;
    for (const Stmt &s : op->stmts) {
      Stmt simplified = mutate(s);
      if (!simplified.defined())
        continue;
      if (simplified.as<Barrier>() && !stmts.empty() && stmts.back().as<Barrier>())
        continue;
      stmts.push_back(simplified);
    }
    return stmts.empty() ? Stmt() : Block::make(stmts);
  }
  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    Expr condition = mutate(op->condition);
    if (auto c = as_const_int(condition))
      return *c ? mutate(op->then_case) : mutate(op->else_case);
    return IRMutator::visit(op, self);
  }
  Stmt visit(const LetStmt *op, const Stmt &self) override {
    Expr value = mutate(op->value);
    // Constants and plain variables are cheaper to read where used.
    if (value.as<IntImm>() || value.as<Variable>())
      return mutate(substitute({{op->name, value}}, op->body));
    Stmt body = mutate(op->body);
    if (!body.defined())
      return Stmt();
    if (!stmt_uses_var(body, op->name))
      return body;
    return LetStmt::make(op->name, value, body);
  }
  Stmt visit(const For *op, const Stmt &self) override {
    Expr extent = mutate(op->extent);
    if (is_const(extent, 0))
      return Stmt();
    bool serial_kind = op->for_kind == ForKind::Serial || op->for_kind == ForKind::Unrolled ||
                       op->for_kind == ForKind::Vectorized;
    if (is_const(extent, 1) && serial_kind)
      return mutate(substitute({{op->name, mutate(op->min)}}, op->body));
    return IRMutator::visit(op, self);
  }

  static bool stmt_uses_var(const Stmt &s, const std::string &name) {
    class Uses : public IRVisitor {
    public:
      explicit Uses(const std::string &n) : name(n) {}
      const std::string &name;
      bool found = false;
      using IRVisitor::visit;
      void visit(const Variable *op) override { found |= op->name == name; }
    } uses(name);
    uses.visit_stmt(s);
    return uses.found;
  }
};

} // namespace

Expr simplify(const Expr &e) { return Simplifier().mutate(e); }
Stmt simplify(const Stmt &s) { return Simplifier().mutate(s); }

} // namespace coalesce
