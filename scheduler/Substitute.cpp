#include "scheduler/Substitute.h"

#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {
class Substituter : public IRMutator {
public:
  explicit Substituter(const std::map<std::string, Expr> &replacements) : replacements_(replacements) {}

private:
  using IRMutator::visit;
  Expr visit(const Variable *op, const Expr &self) override {
    auto it = replacements_.find(op->name);
    return it == replacements_.end() ? self : it->second;
  }
  // A loop or let that rebinds a replaced name hides it from its body.
  template <typename Body> Body hidden(const std::string &name, const Body &body) {
    std::map<std::string, Expr> inner = replacements_;
    inner.erase(name);
    return Substituter(inner).mutate(body);
  }
  Stmt visit(const For *op, const Stmt &self) override {
    if (!replacements_.count(op->name))
      return IRMutator::visit(op, self);
    return For::make(op->name, mutate(op->min), mutate(op->extent), op->for_kind, hidden(op->name, op->body),
                     op->gpu_dim, op->reduction_of, op->role);
  }
  Stmt visit(const LetStmt *op, const Stmt &self) override {
    if (!replacements_.count(op->name))
      return IRMutator::visit(op, self);
    return LetStmt::make(op->name, mutate(op->value), hidden(op->name, op->body));
  }
  Expr visit(const Let *op, const Expr &self) override {
    if (!replacements_.count(op->name))
      return IRMutator::visit(op, self);
    return Let::make(op->name, mutate(op->value), hidden(op->name, op->body));
  }
  const std::map<std::string, Expr> &replacements_;
};
} // namespace

Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e) {
  return Substituter(replacements).mutate(e);
}

Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &s) {
  return Substituter(replacements).mutate(s);
}

} // namespace coalesce
