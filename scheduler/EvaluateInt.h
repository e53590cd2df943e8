#pragma once
// Evaluates an integer expression of scalar parameters (a buffer extent, a
// grid size) once their values are known, as the runtime must at launch.

#include "dsl/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace coalesce {

/// A parameter the expression needs but `values` lacks is a UserError.
int64_t evaluate_int(const Expr &e, const std::map<std::string, int64_t> &values);

} // namespace coalesce
