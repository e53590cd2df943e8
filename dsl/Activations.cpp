#include "dsl/Activations.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"

#include <string>
#include <utility>

namespace coalesce {

namespace {
void check_float(const Expr &x, const char *name) {
  if (!x.defined() || !x.type().is_float())
    user_error(name, "() needs a floating-point argument, got ", x.defined() ? x.type().str() : "nothing");
}
} // namespace

// Each activation widens a bf16/f16 argument to f32 first (the arithmetic
// rule), so its constants are f32 too.
Expr relu(const Expr &input) {
  check_float(input, "relu");
  Expr x = widen_narrow_float(input);
  return max(x, make_zero(x.type()));
}

Expr gelu(const Expr &input) {
  check_float(input, "gelu");
  Expr x = widen_narrow_float(input);
  return make_const(x.type(), 0.5) * x * erfc(x * make_const(x.type(), -0.70710678118654752));
}

Expr gelu_tanh(const Expr &input) {
  check_float(input, "gelu_tanh");
  Expr x = widen_narrow_float(input);
  Expr cube = x * x * x;
  Expr inner = make_const(x.type(), 0.79788456080286536) * (x + make_const(x.type(), 0.044715) * cube);
  return make_const(x.type(), 0.5) * x * (make_one(x.type()) + tanh(inner));
}

Expr sigmoid(const Expr &input) {
  check_float(input, "sigmoid");
  Expr x = widen_narrow_float(input);
  return make_one(x.type()) / (make_one(x.type()) + exp(-x));
}

Expr silu(const Expr &input) {
  check_float(input, "silu");
  Expr x = widen_narrow_float(input);
  return x / (make_one(x.type()) + exp(-x));
}

Expr identity(const Expr &input) {
  check_float(input, "identity");
  return widen_narrow_float(input);
}

Expr activation(const std::string &name, const Expr &x) {
  static const std::pair<const char *, Expr (*)(const Expr &)> kActivations[] = {
      {"relu", relu}, {"gelu", gelu}, {"gelu_tanh", gelu_tanh}, {"sigmoid", sigmoid}, {"silu", silu}, {"identity", identity}};
  std::string names;
  for (const auto &[known, function] : kActivations) {
    if (name == known)
      return function(x);
    names += names.empty() ? known : std::string(", ") + known;
  }
  names.replace(names.rfind(", "), 2, " and ");
  user_error("no activation named '", name, "': the library has ", names);
}

} // namespace coalesce
