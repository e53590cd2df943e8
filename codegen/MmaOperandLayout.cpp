#include "codegen/MmaOperandLayout.h"

#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

namespace coalesce {

namespace {

// Conservatively: every value `e` can take is a multiple of n.
bool multiple_of(const Expr &e, int64_t n) {
  if (auto value = as_const_int(e))
    return *value % n == 0;
  if (const auto *add = e.as<Add>())
    return multiple_of(add->a, n) && multiple_of(add->b, n);
  if (const auto *sub = e.as<Sub>())
    return multiple_of(sub->a, n) && multiple_of(sub->b, n);
  if (const auto *mul = e.as<Mul>())
    return multiple_of(mul->a, n) || multiple_of(mul->b, n);
  if (const auto *select = e.as<Select>())
    return multiple_of(select->true_value, n) && multiple_of(select->false_value, n);
  if (const auto *min = e.as<Min>())
    return multiple_of(min->a, n) && multiple_of(min->b, n);
  if (const auto *max = e.as<Max>())
    return multiple_of(max->a, n) && multiple_of(max->b, n);
  return false;
}

} // namespace

bool has_ldmatrix_rows(const Expr &operand, const char *axis, const char *fixed, int span) {
  const auto *load = operand.as<Load>();
  if (!load || load->indices.size() != 1 || load->type.bits != 16)
    return false;
  auto at = [&](int position) {
    return simplify(substitute({{axis, Expr(position)}, {fixed, Expr(0)}}, load->indices[0]));
  };
  Expr start = at(0);
  for (int c = 1; c < span; ++c)
    if (!is_const(simplify(at(c) - start), c))
      return false;
  return multiple_of(start, 8);
}

} // namespace coalesce
