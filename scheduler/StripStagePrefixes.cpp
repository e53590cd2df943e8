#include "scheduler/StripStagePrefixes.h"

#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <map>
#include <set>

namespace coalesce {

namespace {

// The Params a statement reads: free names that no binding may take.
class FindParams : public IRVisitor {
public:
  std::set<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Param)
      names.insert(op->name);
  }
};

// Binds each qualified name to its short name, unless that would shadow a
// different enclosing binding or a Param (the staging copy's `flat` next to
// a Param named flat), in which case the name keeps its qualifier (with '_'
// for '.'), and '_'s are appended while that too is taken.
class Strip : public IRMutator {
public:
  explicit Strip(const std::set<std::string> &params) {
    // A Param's "qualified" name is its own: it never equals a qualified
    // loop name, so every loop or let of the same short name is renamed.
    for (const std::string &param : params)
      owner_of_short_[param] = param;
  }

private:
  using IRMutator::visit;
  std::map<std::string, std::string> chosen_;       // qualified -> printed
  std::map<std::string, std::string> owner_of_short_; // printed -> qualified, for enclosing bindings

  template <typename Rebuild> Stmt bind(const std::string &qualified, Rebuild rebuild) {
    if (qualified.find('.') == std::string::npos)
      return rebuild(qualified);
    std::string name = loop_short_name(qualified);
    auto enclosing = owner_of_short_.find(name);
    if (enclosing != owner_of_short_.end() && enclosing->second != qualified) {
      name = qualified;
      for (char &c : name)
        c = c == '.' ? '_' : c;
      while (owner_of_short_.count(name) && owner_of_short_[name] != qualified)
        name += "_";
    }
    auto saved_choice = chosen_.find(qualified) == chosen_.end() ? std::string() : chosen_[qualified];
    auto saved_owner = owner_of_short_.count(name) ? owner_of_short_[name] : std::string();
    chosen_[qualified] = name;
    owner_of_short_[name] = qualified;
    Stmt result = rebuild(name);
    if (saved_choice.empty())
      chosen_.erase(qualified);
    else
      chosen_[qualified] = saved_choice;
    if (saved_owner.empty())
      owner_of_short_.erase(name);
    else
      owner_of_short_[name] = saved_owner;
    return result;
  }
  Expr visit(const Variable *op, const Expr &self) override {
    auto it = chosen_.find(op->name);
    if (it == chosen_.end() || it->second == op->name)
      return self;
    return Variable::make(op->type, it->second, op->variable_kind);
  }
  Stmt visit(const For *op, const Stmt &self) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    return bind(op->name, [&](const std::string &name) {
      Stmt body = mutate(op->body);
      return body.defined()
                 ? For::make(name, min, extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role)
                 : body;
    });
  }
  Stmt visit(const LetStmt *op, const Stmt &self) override {
    Expr value = mutate(op->value);
    return bind(op->name, [&](const std::string &name) {
      Stmt body = mutate(op->body);
      return body.defined() ? LetStmt::make(name, value, body) : body;
    });
  }
};
} // namespace

Stmt strip_stage_prefixes(const Stmt &s) {
  FindParams params;
  params.visit_stmt(s);
  return Strip(params.names).mutate(s);
}

} // namespace coalesce
