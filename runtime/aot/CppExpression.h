#pragma once
// Integer expressions of a launcher's sizes (grid and buffer extents, the
// kernels' run-time tests) as C++ text for the generated launcher.

#include "dsl/IR.h"

#include <string>

namespace coalesce {

/// `e`, an integer expression of the sizes (a grid extent, a buffer
/// extent), as a C++ expression of type int64_t over the launcher's
/// parameters. Division and remainder truncate, as in the kernels.
std::string cpp_int(const Expr &e);

} // namespace coalesce
