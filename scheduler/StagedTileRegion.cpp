#include "scheduler/StagedTileRegion.h"

#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <algorithm>

namespace coalesce::staging {

Expr expand_lets(Expr e, const std::map<std::string, Expr> &lets, const std::function<void(const Expr &)> &each_form) {
  for (int depth = 0; depth < 16; ++depth) { // lets refer to lets a few levels deep
    if (each_form)
      each_form(e);
    Expr next = substitute(lets, e);
    if (next.same_as(e))
      break;
    e = next;
  }
  return e;
}

void FindCalls::visit(const Call *op) {
  IRVisitor::visit(op);
  if (op->call_type != CallType::Input || op->name != input_)
    return;
  std::vector<Expr> args;
  for (const Expr &arg : op->args)
    args.push_back(simplify(expand_lets(arg, lets_, [&](const Expr &form) {
      for (const std::string &name : ambiguous_)
        if (ambiguous_name.empty() && expr_uses_var(form, name))
          ambiguous_name = name;
    })));
  calls.push_back(args);
}

bool affine_span(const Expr &index, const std::map<std::string, LoopInfo> &inner, Expr *base, int64_t *extent) {
  // Walk the top-level sum.
  std::vector<std::pair<Expr, int64_t>> terms;
  std::function<void(const Expr &, int64_t)> walk = [&](const Expr &e, int64_t sign) {
    if (const auto *add = e.as<Add>()) {
      walk(add->a, sign);
      walk(add->b, sign);
    } else if (const auto *sub = e.as<Sub>()) {
      walk(sub->a, sign);
      walk(sub->b, -sign);
    } else {
      terms.emplace_back(e, sign);
    }
  };
  walk(index, 1);
  Expr outer = 0;
  int64_t low = 0, high = 0;
  for (const auto &[term, sign] : terms) {
    Expr var = term;
    int64_t coefficient = sign;
    if (const auto *mul = term.as<Mul>(); mul && as_const_int(mul->b)) {
      var = mul->a;
      coefficient *= *as_const_int(mul->b);
    }
    // A loop variable, or its quotient or remainder by a constant (how a
    // fused loop's halves read it: lane / 4, warp % 2).
    int64_t divisor = 0, modulus = 0;
    if (const auto *div = var.as<Div>(); div && as_const_int(div->b) && *as_const_int(div->b) > 0) {
      divisor = *as_const_int(div->b);
      var = div->a;
    } else if (const auto *mod = var.as<Mod>(); mod && as_const_int(mod->b) && *as_const_int(mod->b) > 0) {
      modulus = *as_const_int(mod->b);
      var = mod->a;
    }
    const auto *variable = var.as<Variable>();
    auto loop = variable ? inner.find(variable->name) : inner.end();
    if (loop == inner.end()) {
      for (const auto &[name, info] : inner)
        if (expr_uses_var(term, name))
          return false;
      outer = outer + (sign < 0 ? 0 - term : term);
      continue;
    }
    auto min = as_const_int(loop->second.min), extent = as_const_int(loop->second.extent);
    if (!min || !extent || ((divisor || modulus) && *min < 0))
      return false;
    int64_t first = *min, last = *min + *extent - 1;
    if (divisor) {
      first /= divisor;
      last /= divisor;
    } else if (modulus) {
      first = *extent >= modulus ? 0 : first % modulus;
      last = *extent >= modulus ? modulus - 1 : last % modulus;
      if (first > last)
        first = 0, last = modulus - 1;
    }
    int64_t a = coefficient * first, b = coefficient * last;
    low += std::min(a, b);
    high += std::max(a, b);
  }
  *base = simplify(outer + static_cast<int>(low));
  *extent = high - low + 1;
  return true;
}

Expr ReplaceCalls::visit(const Call *op, const Expr &self) {
  Expr e = IRMutator::visit(op, self);
  const auto *call = e.as<Call>();
  if (call->call_type != CallType::Input || call->name != input_)
    return e;
  std::vector<Expr> indices;
  for (size_t d = 0; d < call->args.size(); ++d)
    indices.push_back(simplify(expand_lets(call->args[d], lets_) - region_.min[d]));
  return Load::make(call->type, buffer_, indices);
}

} // namespace coalesce::staging
