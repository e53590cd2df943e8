#include "scheduler/ClampInputLoads.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <map>
#include <optional>

namespace coalesce {

namespace {

// Clamps each input coordinate into [0, extent - 1]. The lower clamp is left
// out where the coordinate is provably non-negative (loop variables start
// at non-negative constants and coordinates are sums, products and
// quotients of them), and the upper bound needs no guard of its own: an
// input may be empty (extent 0, where extent - 1 = -1 would point before
// the buffer) only when every definition that reads it runs over an empty
// reduction range (scheduler/InputReads.h, checked when the pipeline is
// called), and every load of such an input sits inside that reduction's
// loops: a staged copy ahead of its loop runs only when the staged inputs
// have elements (scheduler/StageInShared.cpp).
class Clamp : public IRMutator {
  using IRMutator::visit;
  std::map<std::string, bool> non_negative_; // loop and let variables in scope

  bool non_negative(const Expr &e) {
    if (auto c = as_const_int(e))
      return *c >= 0;
    if (const auto *var = e.as<Variable>()) {
      auto it = non_negative_.find(var->name);
      return it != non_negative_.end() && it->second;
    }
    if (const auto *add = e.as<Add>())
      return non_negative(add->a) && non_negative(add->b);
    if (const auto *mul = e.as<Mul>())
      return non_negative(mul->a) && non_negative(mul->b);
    if (const auto *div = e.as<Div>())
      return non_negative(div->a) && as_const_int(div->b).value_or(0) > 0;
    if (const auto *mod = e.as<Mod>())
      return non_negative(mod->a) && as_const_int(mod->b).value_or(0) > 0;
    if (const auto *min = e.as<Min>())
      return non_negative(min->a) && non_negative(min->b);
    if (const auto *max = e.as<Max>())
      return non_negative(max->a) || non_negative(max->b);
    return false;
  }

  template <typename Node, typename Rebuild> Stmt bind(const Node *op, const std::string &name, bool value, Rebuild rebuild) {
    auto saved = non_negative_.find(name) == non_negative_.end() ? std::optional<bool>() : non_negative_[name];
    non_negative_[name] = value;
    Stmt result = rebuild();
    if (saved)
      non_negative_[name] = *saved;
    else
      non_negative_.erase(name);
    return result;
  }
  Stmt visit(const For *op, const Stmt &self) override {
    return bind(op, op->name, non_negative(op->min), [&] { return IRMutator::visit(op, self); });
  }
  Stmt visit(const LetStmt *op, const Stmt &self) override {
    return bind(op, op->name, non_negative(op->value), [&] { return IRMutator::visit(op, self); });
  }
  Expr visit(const Call *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *call = e.as<Call>();
    if (call->call_type != CallType::Input)
      return e;
    std::vector<Expr> indices;
    for (size_t d = 0; d < call->args.size(); ++d) {
      Expr upper = min(call->args[d], call->input->extents[d] - 1);
      indices.push_back(non_negative(call->args[d]) ? upper : max(upper, 0));
    }
    return Load::make(call->type, call->name, indices);
  }
};

} // namespace

Stmt clamp_input_loads(const Stmt &s) { return Clamp().mutate(s); }

} // namespace coalesce
