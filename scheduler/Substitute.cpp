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
