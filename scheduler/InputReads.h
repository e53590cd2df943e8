#pragma once
// Which definitions read each Input, and over which reduction ranges: an
// Input may be empty (K = 0) when every definition that reads it iterates
// over a reduction range that is empty then, since such a definition never
// runs its body. The binding of arguments (runtime/Arguments.cpp) and the
// AOT launcher check this rule against the sizes of each call.

#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coalesce {

/// The definitions of env's Funcs (after inlining and bias folding, as they
/// run) that read input `name`, each with the extents of the reduction
/// variables it iterates over.
std::vector<InputRead> input_reads(const Environment &env, const std::string &name);

/// True when none of `reads` can run at these parameter values: each has a
/// reduction extent that is zero or negative. (False when one always reads.)
bool never_read(const std::vector<InputRead> &reads, const std::map<std::string, int64_t> &params);

} // namespace coalesce
