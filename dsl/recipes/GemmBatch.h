#pragma once
// What the GEMM recipes share about a batch of products: out(b, i, j), the
// batch a dimension of its own before the product's rows, which the grid's
// blocks take as their outermost (z) dimension.

#include "dsl/Func.h"

#include <vector>

namespace coalesce {

/// out's dimensions before `i` (a batch: out(b, i, j)), outermost first; at
/// most one, as a grid has one dimension left for it (a UserError naming
/// `recipe` otherwise).
std::vector<VarOrRVar> gemm_batch_vars(const Func &out, const Var &i, const char *recipe);

} // namespace coalesce
