#include "scheduler/SpecializeSizes.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <cstdlib>
#include <set>
#include <string>
#include <utility>

namespace coalesce {

namespace {

// The quotient variable standing for X / m in a specialized kernel. No
// user name has a '.', and the compiler's own dotted names extend buffers'
// names, never a scalar argument's.
std::string quotient_name(const std::string &size) { return size + ".q"; }

// Sums of variables times constants, plus a constant.
struct Linear {
  std::map<std::string, int64_t> terms;
  int64_t constant = 0;
};

bool linearize(const Expr &e, int64_t scale, Linear &out) {
  if (auto c = as_const_int(e)) {
    out.constant += scale * *c;
    return true;
  }
  if (const auto *v = e.as<Variable>()) {
    out.terms[v->name] += scale;
    return true;
  }
  if (const auto *add = e.as<Add>())
    return linearize(add->a, scale, out) && linearize(add->b, scale, out);
  if (const auto *sub = e.as<Sub>())
    return linearize(sub->a, scale, out) && linearize(sub->b, -scale, out);
  if (const auto *mul = e.as<Mul>()) {
    if (auto c = as_const_int(mul->b))
      return linearize(mul->a, scale * *c, out);
    if (auto c = as_const_int(mul->a))
      return linearize(mul->b, scale * *c, out);
  }
  return false;
}

// Divisions and remainders by a constant c of sums that are multiples of c
// plus a non-negative constant, over the quotients (each >= 1): a sum of
// non-negative terms, so that truncation and the floor agree.
class FoldMultiples : public IRMutator {
public:
  explicit FoldMultiples(std::set<std::string> quotients) : quotients_(std::move(quotients)) {}
  int folded = 0; ///< divisions and remainders made exact

private:
  using IRMutator::visit;
  std::set<std::string> quotients_;

  // The sum's form when every term is a quotient with a non-negative
  // coefficient that `divisor` divides, and the constant is non-negative.
  std::optional<Linear> multiple_of(const Expr &sum, int64_t divisor) const {
    Linear form;
    if (divisor <= 0 || !sum.type().is_int() || !linearize(sum, 1, form) || form.constant < 0)
      return std::nullopt;
    for (const auto &[name, coefficient] : form.terms)
      if (!quotients_.count(name) || coefficient < 0 || coefficient % divisor != 0)
        return std::nullopt;
    return form;
  }
  // A division's or remainder's dividend in the form multiple_of gives,
  // with its constant divisor, where the divisor divides it (counted).
  template <typename Op> std::optional<std::pair<Linear, int64_t>> exact(const Expr &e) {
    const auto *op = e.as<Op>();
    auto divisor = op ? as_const_int(op->b) : std::nullopt;
    auto form = divisor ? multiple_of(op->a, *divisor) : std::nullopt;
    if (!form)
      return std::nullopt;
    ++folded;
    return std::make_pair(*form, *divisor);
  }
  Expr visit(const Div *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    auto exact_division = exact<Div>(e);
    if (!exact_division)
      return e;
    const auto &[form, divisor] = *exact_division;
    Expr result = make_const(e.type(), static_cast<double>(form.constant / divisor));
    for (const auto &[name, coefficient] : form.terms)
      result = result + Variable::make(e.type(), name) * static_cast<int>(coefficient / divisor);
    return result;
  }
  Expr visit(const Mod *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    auto exact_remainder = exact<Mod>(e);
    return exact_remainder
               ? make_const(e.type(), static_cast<double>(exact_remainder->first.constant % exact_remainder->second))
               : e;
  }
};

} // namespace

std::optional<GpuProgram> specialize_sizes(const GpuProgram &program, const SizeMultiples &multiples) {
  std::map<std::string, Expr> rounded;
  std::set<std::string> quotients;
  std::vector<std::pair<const Argument *, int>> specialized;
  for (const auto &[name, multiple] : multiples)
    for (const Argument &arg : program.args)
      if (arg.name == name && !arg.is_buffer()) {
        COALESCE_INTERNAL_ASSERT(multiple > 1, "a size specialized as a multiple of " + std::to_string(multiple));
        rounded[name] = Variable::make(arg.type, quotient_name(name)) * static_cast<int>(multiple);
        quotients.insert(quotient_name(name));
        specialized.emplace_back(&arg, static_cast<int>(multiple));
      }
  int folded = 0;
  auto specialize = [&](const Stmt &body) {
    FoldMultiples fold(quotients);
    Stmt result = simplify(fold.mutate(simplify(substitute(rounded, body))));
    folded += fold.folded;
    return result;
  };
  GpuProgram variant = program;
  for (GpuKernel &kernel : variant.kernels) {
    Stmt body = specialize(kernel.body);
    for (const auto &[arg, multiple] : specialized) {
      Expr x = Variable::make(arg->type, arg->name);
      body = LetStmt::make(quotient_name(arg->name), x / multiple, body);
    }
    kernel.body = body;
  }
  if (folded == 0)
    return std::nullopt;
  return variant;
}

namespace {

bool specialization_enabled() {
  const char *value = std::getenv("COALESCE_SPECIALIZE");
  return !(value && std::string(value) == "0");
}

// The largest of kSpecializedMultiples that `value` (positive) is a
// multiple of; 0 where none is.
int64_t largest_multiple(int64_t value) {
  for (int64_t multiple : kSpecializedMultiples)
    if (value > 0 && value % multiple == 0)
      return multiple;
  return 0;
}

} // namespace

SizeMultiples specializable_sizes(const GpuProgram &program, const std::map<std::string, int64_t> &params) {
  std::map<std::string, int64_t> sizes;
  for (const Argument &arg : program.args)
    if (auto value = params.find(arg.name); !arg.is_buffer() && value != params.end())
      sizes.insert(*value);
  return specializable_sizes(sizes);
}

std::string specialization_name(const SizeMultiples &multiples) {
  std::string text;
  for (const auto &[name, multiple] : multiples)
    text += (text.empty() ? "" : ", ") + name + " % " + std::to_string(multiple);
  return text;
}

SizeMultiples specializable_sizes(const std::map<std::string, int64_t> &sizes) {
  SizeMultiples multiples;
  if (!specialization_enabled())
    return multiples;
  for (const auto &[name, value] : sizes)
    if (int64_t multiple = largest_multiple(value))
      multiples[name] = multiple;
  return multiples;
}

} // namespace coalesce
