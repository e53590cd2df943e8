#include "scheduler/VerifyMmaOperands.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"

#include <map>
#include <optional>
#include <set>

namespace coalesce {

namespace {

using Values = std::map<std::string, int64_t>;

// Integer index arithmetic at the given values of its variables; nothing
// where the expression holds anything else (then the factor is not checked).
std::optional<int64_t> evaluate(const Expr &e, Values &values) {
  auto both = [&](const Expr &a, const Expr &b, auto op) -> std::optional<int64_t> {
    auto x = evaluate(a, values), y = evaluate(b, values);
    if (!x || !y)
      return std::nullopt;
    return op(*x, *y);
  };
  auto floor_div = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  if (const auto *imm = e.as<IntImm>())
    return imm->value;
  if (const auto *var = e.as<Variable>()) {
    auto found = values.find(var->name);
    return found == values.end() ? std::nullopt : std::optional<int64_t>(found->second);
  }
  if (const auto *cast = e.as<Cast>())
    return cast->type.is_float() ? std::nullopt : evaluate(cast->value, values);
  if (const auto *op = e.as<Add>())
    return both(op->a, op->b, [](int64_t a, int64_t b) { return a + b; });
  if (const auto *op = e.as<Sub>())
    return both(op->a, op->b, [](int64_t a, int64_t b) { return a - b; });
  if (const auto *op = e.as<Mul>())
    return both(op->a, op->b, [](int64_t a, int64_t b) { return a * b; });
  if (const auto *op = e.as<Div>()) {
    auto d = evaluate(op->b, values);
    auto n = evaluate(op->a, values);
    return d && n && *d != 0 ? std::optional<int64_t>(floor_div(*n, *d)) : std::nullopt;
  }
  if (const auto *op = e.as<Mod>()) {
    auto d = evaluate(op->b, values);
    auto n = evaluate(op->a, values);
    return d && n && *d != 0 ? std::optional<int64_t>(*n - floor_div(*n, *d) * *d) : std::nullopt;
  }
  if (const auto *op = e.as<Min>())
    return both(op->a, op->b, [](int64_t a, int64_t b) { return std::min(a, b); });
  if (const auto *op = e.as<Max>())
    return both(op->a, op->b, [](int64_t a, int64_t b) { return std::max(a, b); });
  if (const auto *op = e.as<Call>(); op && op->intrinsic == Intrinsic::BitXor)
    return both(op->args[0], op->args[1], [](int64_t a, int64_t b) { return a ^ b; });
  return std::nullopt;
}

// The element a factor of the update reads: its load's buffer indices, once
// conversions around it are peeled off.
const Load *element_read(Expr e) {
  for (;;) {
    if (const auto *cast = e.as<Cast>())
      e = cast->value;
    else if (const auto *call = e.as<Call>(); call && call->args.size() == 1 && call->intrinsic)
      e = call->args[0];
    else
      return e.as<Load>();
  }
}

void variables_of(const Expr &e, std::set<std::string> &names) {
  class Find : public IRVisitor {
  public:
    explicit Find(std::set<std::string> &n) : names(n) {}
    std::set<std::string> &names;

  private:
    using IRVisitor::visit;
    void visit(const Variable *op) override { names.insert(op->name); }
  } find(names);
  find.visit_expr(e);
}

// Whether the element `load` reads stays the same when `free` varies over
// `samples`, at each sampled value of `fixed`, at mma.k = 1 and the other
// variables at small values of no pattern (0 could hide a product). False
// only where it is seen to change. A few samples suffice: the factor the
// back end would misread walks the other coordinate at every step.
bool independent_of(const Load *load, const char *free, const std::vector<int64_t> &samples, const char *fixed,
                    const std::vector<int64_t> &fixed_samples) {
  std::set<std::string> names;
  for (const Expr &index : load->indices)
    variables_of(index, names);
  Values values;
  int64_t seed = 5;
  for (const std::string &name : names)
    values[name] = seed = (seed * 7 + 3) % 11 + 1;
  values[kMmaStep] = 1;
  for (int64_t at : fixed_samples) {
    values[fixed] = at;
    std::optional<std::vector<int64_t>> first;
    for (int64_t sample : samples) {
      values[free] = sample;
      std::vector<int64_t> element;
      for (const Expr &index : load->indices) {
        auto value = evaluate(index, values);
        if (!value)
          return true; // not index arithmetic this can evaluate: unchecked
        element.push_back(*value);
      }
      if (!first)
        first = element;
      else if (*first != element)
        return false;
    }
  }
  return true;
}

class Verify : public IRVisitor {
private:
  using IRVisitor::visit;
  void visit(const WarpMma *op) override {
    const auto *store = op->update.as<Store>();
    const auto *add = store ? store->value.as<Add>() : nullptr;
    const auto *mul = add ? add->b.as<Mul>() : nullptr;
    COALESCE_INTERNAL_ASSERT(mul, "an MMA statement whose update is not acc + a * b: ", op->update);
    const MmaInstruction &instruction = mma_instruction(op->kind);
    const int rows = is_warpgroup_mma(op->kind) ? 64 : instruction.m;
    const int columns = is_warpgroup_mma(op->kind) ? op->n : instruction.n;
    auto spread = [](int extent) {
      std::vector<int64_t> inside;
      for (int64_t s : {0, 1, 2, 7, 8, 15, 16})
        if (s < extent)
          inside.push_back(s);
      inside.push_back(extent - 1);
      return inside;
    };
    const Load *a = element_read(mul->a), *b = element_read(mul->b);
    bool ordered = (!a || independent_of(a, kMmaColumn, spread(columns), kMmaRow, spread(rows))) &&
                   (!b || independent_of(b, kMmaRow, spread(rows), kMmaColumn, spread(columns)));
    COALESCE_INTERNAL_ASSERT(ordered, "the MMA update of '", store->buffer, "' reads its first factor along the ",
                             "instruction's columns (", kMmaColumn, ") or its second along its rows (", kMmaRow,
                             "), but the GPU back end takes the first as the instruction's A (rows) and the second ",
                             "as its B (columns): ", op->update);
    IRVisitor::visit(op);
  }
};

} // namespace

void verify_mma_operands(const Stmt &s) { Verify().visit_stmt(s); }

} // namespace coalesce
