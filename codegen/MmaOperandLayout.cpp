#include "codegen/MmaOperandLayout.h"

#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

namespace coalesce {

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
  return provably_multiple_of(start, 8);
}

} // namespace coalesce
