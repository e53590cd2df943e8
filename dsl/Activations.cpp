#include "dsl/Activations.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"

namespace coalesce {

namespace {
void check_float(const Expr &x, const char *name) {
  if (!x.defined() || !x.type().is_float())
    user_error(name, "() needs a floating-point argument, got ", x.defined() ? x.type().str() : "nothing");
}
} // namespace

Expr relu(const Expr &x) {
  check_float(x, "relu");
  return max(x, make_zero(x.type()));
}

Expr gelu(const Expr &x) {
  check_float(x, "gelu");
  return make_const(x.type(), 0.5) * x * (make_one(x.type()) + erf(x * make_const(x.type(), 0.70710678118654752)));
}

Expr gelu_tanh(const Expr &x) {
  check_float(x, "gelu_tanh");
  Expr cube = x * x * x;
  Expr inner = make_const(x.type(), 0.79788456080286536) * (x + make_const(x.type(), 0.044715) * cube);
  return make_const(x.type(), 0.5) * x * (make_one(x.type()) + tanh(inner));
}

} // namespace coalesce
