#pragma once
// A Func's pure definition as an expression at one point of its domain, for
// passes that compute an output's epilogue away from the loops that
// build_loop_nest gave it (split_k's combine kernel, the copy-out of
// gpu_tile_stores(TileStores::SumsThroughShared)).
//
//   out(i, j) = gelu(acc(i, j) + bias(j))   at (r, c), acc -> S[..]
//     ->  gelu(S[..] + bias[c])
//
// The Func's variables become the point's coordinates (substituted, not
// bound by lets: a let named after a variable could capture a loop of the
// caller's nest that happens to share the name), each Func it reads the
// caller's value for it (check_algorithm has made sure that every Func is
// read at the definition's own coordinates), and each Input read a plain
// load. Params stay as they are.

#include "scheduler/Environment.h"

#include <functional>
#include <string>
#include <vector>

namespace coalesce {

/// `func`'s pure definition at `point` (one coordinate per pure variable),
/// with each Func it reads replaced by `value_of(name)`.
Expr definition_at_point(const FuncContents &func, const std::vector<Expr> &point,
                         const std::function<Expr(const std::string &)> &value_of);

/// The names of the Funcs that `func`'s pure definition reads, each once, in
/// the order of their first read.
std::vector<std::string> funcs_read_by_definition(const FuncContents &func);

} // namespace coalesce
