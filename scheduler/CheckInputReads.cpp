#include "scheduler/CheckInputReads.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"

#include <map>
#include <set>
#include <optional>

namespace coalesce {

namespace {

// c + sum(coefficient * Param): the form of every extent and bound this
// check can compare. Params are sizes, so each is at least 1.
struct Linear {
  int64_t constant = 0;
  std::map<std::string, int64_t> params;

  Linear operator+(const Linear &o) const {
    Linear r = *this;
    r.constant += o.constant;
    for (const auto &[p, c] : o.params)
      r.params[p] += c;
    return r;
  }
  Linear scaled(int64_t factor) const {
    Linear r;
    r.constant = constant * factor;
    for (const auto &[p, c] : params)
      r.params[p] = c * factor;
    return r;
  }
  Linear operator-(const Linear &o) const { return *this + o.scaled(-1); }
  /// True when the value is >= 0 for every value of the Params (each >= 1).
  bool provably_non_negative() const {
    int64_t least = constant;
    for (const auto &[p, c] : params) {
      if (c < 0)
        return false;
      least += c;
    }
    return least >= 0;
  }
};

// "N + 1", "2*M - 3", "0".
std::string to_text(const Linear &l) {
  std::string text;
  for (const auto &[p, c] : l.params) {
    if (c == 0)
      continue;
    if (!text.empty())
      text += c < 0 ? " - " : " + ";
    else if (c < 0)
      text += "-";
    int64_t magnitude = c < 0 ? -c : c;
    text += (magnitude == 1 ? "" : std::to_string(magnitude) + "*") + p;
  }
  if (text.empty())
    return std::to_string(l.constant);
  if (l.constant != 0)
    text += (l.constant < 0 ? " - " : " + ") + std::to_string(l.constant < 0 ? -l.constant : l.constant);
  return text;
}

std::optional<Linear> linear(const Expr &e) {
  if (const auto *imm = e.as<IntImm>())
    return Linear{imm->value, {}};
  if (const auto *var = e.as<Variable>(); var && var->variable_kind == VariableKind::Param)
    return Linear{0, {{var->name, 1}}};
  if (const auto *add = e.as<Add>()) {
    auto a = linear(add->a), b = linear(add->b);
    return a && b ? std::optional<Linear>(*a + *b) : std::nullopt;
  }
  if (const auto *sub = e.as<Sub>()) {
    auto a = linear(sub->a), b = linear(sub->b);
    return a && b ? std::optional<Linear>(*a - *b) : std::nullopt;
  }
  if (const auto *mul = e.as<Mul>()) {
    auto a = linear(mul->a), b = linear(mul->b);
    if (a && b && b->params.empty())
      return a->scaled(b->constant);
    if (a && b && a->params.empty())
      return b->scaled(a->constant);
  }
  return std::nullopt;
}

// The least and greatest value of a coordinate, both linear in the Params.
struct Range {
  Linear lo, hi;
};

class CheckReads : public IRVisitor {
public:
  CheckReads(const Environment &env, const FuncContents &func) : env_(env), func_(func) {}

private:
  using IRVisitor::visit;

  // The min and extent of a variable of the definition: a reduction
  // variable's domain, or the output's extent in a pure variable's dimension
  // (extent undefined when neither is known).
  std::pair<Expr, Expr> domain_of(const Variable *var) const {
    if (var->variable_kind == VariableKind::Reduction)
      return {var->reduction_min, var->reduction_extent};
    Expr extent;
    for (size_t p = 0; p < func_.pure_vars.size() && p < env_.domain.size(); ++p)
      if (func_.pure_vars[p] == var->name)
        extent = env_.domain[p];
    return {Expr(0), extent};
  }

  // The range of a variable of the definition, from its domain.
  std::optional<Range> variable_range(const Variable *var) const {
    if (var->variable_kind == VariableKind::Param) {
      Linear p{0, {{var->name, 1}}};
      return Range{p, p};
    }
    auto [min, extent] = domain_of(var);
    auto lo = extent.defined() ? linear(min) : std::nullopt;
    auto ext = extent.defined() ? linear(extent) : std::nullopt;
    if (!lo || !ext)
      return std::nullopt;
    return Range{*lo, *lo + *ext - Linear{1, {}}};
  }

  std::optional<Range> range(const Expr &e) const {
    if (const auto *imm = e.as<IntImm>())
      return Range{Linear{imm->value, {}}, Linear{imm->value, {}}};
    if (const auto *var = e.as<Variable>())
      return variable_range(var);
    if (const auto *add = e.as<Add>()) {
      auto a = range(add->a), b = range(add->b);
      return a && b ? std::optional<Range>(Range{a->lo + b->lo, a->hi + b->hi}) : std::nullopt;
    }
    if (const auto *sub = e.as<Sub>()) {
      auto a = range(sub->a), b = range(sub->b);
      return a && b ? std::optional<Range>(Range{a->lo - b->hi, a->hi - b->lo}) : std::nullopt;
    }
    // x % m with x >= 0 and m a positive constant or size: [0, m - 1].
    if (const auto *mod = e.as<Mod>()) {
      auto a = range(mod->a);
      auto m = linear(mod->b);
      if (a && m && a->lo.provably_non_negative() && (*m - Linear{1, {}}).provably_non_negative())
        return Range{Linear{0, {}}, *m - Linear{1, {}}};
      return std::nullopt;
    }
    if (const auto *mul = e.as<Mul>()) {
      const Expr *other = nullptr;
      int64_t factor = 0;
      if (const auto *c = mul->b.as<IntImm>())
        other = &mul->a, factor = c->value;
      else if (const auto *c = mul->a.as<IntImm>())
        other = &mul->b, factor = c->value;
      auto r = other ? range(*other) : std::nullopt;
      if (!r)
        return std::nullopt;
      Linear lo = r->lo.scaled(factor), hi = r->hi.scaled(factor);
      return factor >= 0 ? Range{lo, hi} : Range{hi, lo};
    }
    return std::nullopt;
  }

  // "i in [0, M), k in [0, K)": the domains a message relies on.
  std::string domains_of(const Expr &coordinate) const {
    class Collect : public IRVisitor {
    public:
      std::vector<const Variable *> vars;
      using IRVisitor::visit;
      void visit(const Variable *op) override {
        if (op->variable_kind != VariableKind::Param)
          vars.push_back(op);
      }
    } collect;
    collect.visit_expr(coordinate);
    std::string text;
    std::set<std::string> listed; // each variable once (not by searching the text: "kk in" holds "k in")
    for (const Variable *var : collect.vars) {
      auto [min, extent] = domain_of(var);
      if (!extent.defined() || !listed.insert(var->name).second)
        continue;
      text += (text.empty() ? "" : ", ") + var->name + " in [" + to_string(min) + ", " +
              to_string(is_zero(min) ? extent : Expr(min + extent)) + ")";
    }
    return text.empty() ? "" : " (" + text + ")";
  }
  static bool is_zero(const Expr &e) {
    const auto *imm = e.as<IntImm>();
    return imm && imm->value == 0;
  }

  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (op->call_type != CallType::Input)
      return;
    std::string call = op->name + "(";
    for (size_t d = 0; d < op->args.size(); ++d)
      call += (d ? ", " : "") + to_string(op->args[d]);
    call += ")";
    for (size_t d = 0; d < op->args.size(); ++d) {
      const Expr &coordinate = op->args[d];
      const Expr &extent = op->input->extents[d];
      std::string where = str_cat("'", func_.name, "' reads ", call, ": coordinate ", d, " of '", op->name, "', ",
                                  to_string(coordinate), domains_of(coordinate));
      auto r = range(coordinate);
      auto ext = linear(extent);
      if (!r || !ext)
        user_error(where, ", is not provably inside the extent [0, ", to_string(extent), ") of '", op->name,
                   "': Coalesce proves reads in bounds only for sums of variables times constants, Params and "
                   "constants, and x % m with x >= 0. Read Inputs at such coordinates, or compute the value in "
                   "another Func");
      if (!r->lo.provably_non_negative())
        user_error(where, ", can be as low as ", to_text(r->lo), ", below 0, outside the extent [0, ",
                   to_string(extent), ") of '", op->name,
                   "'; an Input is read only inside its extents: shift the "
                   "coordinate, or narrow the domain "
                   "with bound()");
      if (!(*ext - Linear{1, {}} - r->hi).provably_non_negative())
        user_error(where, ", reaches ", to_text(r->hi), ", which is not provably below the extent ", to_string(extent),
                   " of '", op->name, "' in dimension ", d, "; an Input is read only inside its extents [0, ",
                   to_string(extent), "): declare the Input larger, or narrow the domain with bound()");
    }
  }

  const Environment &env_;
  const FuncContents &func_;
};

} // namespace

void check_input_reads(const Environment &env) {
  for (const FuncContents &func : env.funcs) {
    if (!func.defined)
      continue;
    CheckReads check(env, func);
    check.visit_expr(func.pure.value);
    for (const Definition &update : func.updates)
      check.visit_expr(update.value);
  }
}

} // namespace coalesce
