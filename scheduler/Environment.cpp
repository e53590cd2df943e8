#include "scheduler/Environment.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

#include <algorithm>
#include <functional>
#include <set>

namespace coalesce {

namespace {

// Every Func, Input and Param an expression mentions.
class FindDependencies : public IRVisitor {
public:
  std::vector<std::shared_ptr<FuncContents>> funcs;
  std::vector<std::shared_ptr<const InputContents>> inputs;
  std::set<std::string> params;

  using IRVisitor::visit;
  void visit(const Call *op) override {
    if (op->call_type == CallType::Func)
      funcs.push_back(op->func);
    if (op->call_type == CallType::Input) {
      inputs.push_back(op->input);
      for (const Expr &extent : op->input->extents)
        visit_expr(extent);
      for (const Expr &stride : op->input->strides)
        visit_expr(stride);
    }
    IRVisitor::visit(op);
  }
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Param)
      params.insert(op->name);
    visit_expr(op->reduction_min);
    visit_expr(op->reduction_extent);
  }
};

void visit_definitions(const FuncContents &func, FindDependencies &finder) {
  finder.visit_expr(func.pure.value);
  for (const Definition &update : func.updates)
    finder.visit_expr(update.value);
  for (const Expr &bound : func.schedule.bounds)
    finder.visit_expr(bound);
  for (const Expr &stride : func.output_strides)
    finder.visit_expr(stride);
}

// A Func that reads itself through other Funcs: `acc += A*B*gate` with
// `gate = select(acc > 0, ...)` reads the running value inside its own
// reduction, which no loop order computes (the same written inline is no
// reduction either). Only a Func's own update may read it, at its own
// coordinates, as the running value (check_algorithm).
[[noreturn]] void reject_cycle(const std::vector<const FuncContents *> &path, const FuncContents *again) {
  auto first = std::find(path.begin(), path.end(), again);
  std::string chain;
  for (auto it = first; it != path.end(); ++it)
    chain += (*it)->name + " -> ";
  chain += again->name;
  const FuncContents *reader = path.back();
  user_error("'", again->name, "' reads its own value through other Funcs (", chain, "): '", reader->name,
             "' calls '", again->name, "', which is computed from '", reader->name,
             "'. A reduction's running value may be read only as the running value itself, ", again->name,
             "(...) combined with one term, never inside the term, directly or through another Func; compute the "
             "term from Inputs and Funcs that do not read '", again->name, "'");
}

} // namespace

const FuncContents *Environment::find(const std::string &name) const {
  for (const FuncContents &func : funcs)
    if (func.name == name)
      return &func;
  return nullptr;
}

FuncContents *Environment::find(const std::string &name) {
  for (FuncContents &func : funcs)
    if (func.name == name)
      return &func;
  return nullptr;
}

std::vector<std::string> Environment::consumers_of(const std::string &name) const {
  std::vector<std::string> consumers;
  for (const FuncContents &func : funcs) {
    if (func.name == name)
      continue;
    FindDependencies finder;
    visit_definitions(func, finder);
    for (const auto &callee : finder.funcs)
      if (callee->name == name) {
        consumers.push_back(func.name);
        break;
      }
  }
  return consumers;
}

std::vector<std::string> Environment::callees_of(const std::string &name) const {
  const FuncContents *func = find(name);
  COALESCE_INTERNAL_ASSERT(func, "callees of unknown Func '", name, "'");
  FindDependencies finder;
  visit_definitions(*func, finder);
  std::vector<std::string> callees;
  for (const auto &callee : finder.funcs)
    if (std::find(callees.begin(), callees.end(), callee->name) == callees.end())
      callees.push_back(callee->name);
  return callees;
}

Environment make_environment(const Func &output) {
  if (!output.contents()->defined)
    user_error("Func '", output.name(), "' has no definition to lower");
  Environment env;
  std::set<std::string> params;
  std::vector<std::shared_ptr<FuncContents>> order;
  std::set<const FuncContents *> done, active;
  std::vector<const FuncContents *> path; // the Funcs being visited, outermost first
  // Depth-first: a Func is placed after every Func it calls.
  std::function<void(const std::shared_ptr<FuncContents> &)> visit = [&](const std::shared_ptr<FuncContents> &func) {
    if (done.count(func.get()))
      return;
    active.insert(func.get());
    path.push_back(func.get());
    FindDependencies finder;
    visit_definitions(*func, finder);
    for (const auto &callee : finder.funcs) {
      if (callee == func)
        continue; // the running value of an update: check_algorithm's business
      if (active.count(callee.get()))
        reject_cycle(path, callee.get());
      visit(callee);
    }
    for (const auto &input : finder.inputs) {
      auto [it, inserted] = env.inputs.emplace(input->name, input);
      if (!inserted && it->second != input)
        user_error("two different Inputs are named '", input->name, "'; give each its own name");
    }
    params.insert(finder.params.begin(), finder.params.end());
    active.erase(func.get());
    path.pop_back();
    done.insert(func.get());
    order.push_back(func);
  };
  visit(output.contents());
  std::set<std::string> names;
  for (const auto &func : order) {
    if (!names.insert(func->name).second)
      user_error("two different Funcs are named '", func->name, "'; give each its own name");
    if (env.inputs.count(func->name))
      user_error("'", func->name, "' names both a Func and an Input; give each its own name");
    if (params.count(func->name))
      user_error("'", func->name, "' names both a Func and a Param; give each its own name");
    env.funcs.push_back(*func);
  }
  for (const auto &[name, input] : env.inputs)
    if (params.count(name))
      user_error("'", name, "' names both an Input and a Param; give each its own name");
  env.params.assign(params.begin(), params.end());
  return env;
}

} // namespace coalesce
