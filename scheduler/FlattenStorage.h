#pragma once
// Lowering pass: multi-dimensional loads and stores become one flat, row-major
// i32 index: buffer[i, j] -> buffer[i*extent1 + j]. Extents come from the
// function's arguments and from each allocation.

#include "scheduler/LoweredFunc.h"

namespace coalesce {

Stmt flatten_storage(const Stmt &s, const std::vector<Argument> &args);

} // namespace coalesce
