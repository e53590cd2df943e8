#pragma once
// Analysis shared by the verifiers that run part of a nest at known values
// (which threads run a statement; the phases one block's barriers go
// through): the value of an integer expression whose variables are given.

#include "dsl/IR.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace coalesce {

/// The value of an integer expression of the variables `at` gives, or
/// nothing where it reads anything else (a load, a call, another
/// variable). Division and remainder of non-negative values by positive
/// constants only (C's and the floor's agree there).
std::optional<int64_t> concrete_value(const Expr &e, const std::map<std::string, int64_t> &at);

} // namespace coalesce
