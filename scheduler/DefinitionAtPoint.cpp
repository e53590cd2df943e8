#include "scheduler/DefinitionAtPoint.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

#include <algorithm>
#include <map>

namespace coalesce {

namespace {

class AtPoint : public IRMutator {
public:
  AtPoint(const std::map<std::string, Expr> &coordinates, const std::function<Expr(const std::string &)> &value_of)
      : coordinates_(coordinates), value_of_(value_of) {}

private:
  using IRMutator::visit;
  Expr visit(const Variable *op, const Expr &self) override {
    auto found = coordinates_.find(op->name);
    return op->variable_kind == VariableKind::Param || found == coordinates_.end() ? self : found->second;
  }
  Expr visit(const Call *op, const Expr &self) override {
    Expr rebuilt = IRMutator::visit(op, self);
    const auto *call = rebuilt.as<Call>();
    switch (call->call_type) {
    case CallType::Input:
      return Load::make(call->type, call->name, call->args);
    case CallType::Func:
      return value_of_(call->name);
    case CallType::Intrinsic:
      return rebuilt;
    }
    return rebuilt;
  }
  const std::map<std::string, Expr> &coordinates_;
  const std::function<Expr(const std::string &)> &value_of_;
};

} // namespace

Expr definition_at_point(const FuncContents &func, const std::vector<Expr> &point,
                         const std::function<Expr(const std::string &)> &value_of) {
  COALESCE_INTERNAL_ASSERT(point.size() == func.pure_vars.size(), "a point of ", point.size(),
                           " coordinates for the definition of '", func.name, "', which has ", func.pure_vars.size(),
                           " variables");
  std::map<std::string, Expr> coordinates;
  for (size_t d = 0; d < point.size(); ++d)
    coordinates[func.pure_vars[d]] = point[d];
  return AtPoint(coordinates, value_of).mutate(func.pure.value);
}

std::vector<std::string> funcs_read_by_definition(const FuncContents &func) {
  struct Collect : IRVisitor {
    std::vector<std::string> names;
    using IRVisitor::visit;
    void visit(const Call *op) override {
      if (op->call_type == CallType::Func && std::find(names.begin(), names.end(), op->name) == names.end())
        names.push_back(op->name);
      IRVisitor::visit(op);
    }
  } collect;
  collect.visit_expr(func.pure.value);
  return collect.names;
}

} // namespace coalesce
