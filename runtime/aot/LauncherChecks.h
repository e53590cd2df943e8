#pragma once
// The part of a generated launcher that checks its arguments before
// anything runs, so that nothing is written half-way: the sizes (not
// negative, at most 2^30, those fixed when generating as generated); each
// buffer's elements, or a view's reach, within 2^30, a view's strides at
// least 1 and an output view's elements apart; no null pointers but for
// empty buffers; the workspace; an input empty only where nothing reads it
// (K = 0) or the output is empty (bind_arguments' rule); reductions' extents
// not negative; the output sharing no memory with any input.

#include "runtime/aot/LauncherArgs.h"

#include <string>
#include <vector>

namespace coalesce::launcher_text {

/// The checks, as statements of the launcher's body, each returning
/// CUDA_ERROR_INVALID_VALUE with a message naming what is wrong. They
/// define NAME_elements_ for each buffer and, with a workspace,
/// workspaceW_ pointers, which the launch uses.
std::string argument_checks(const LauncherSpec &spec, const std::vector<LauncherArg> &args);

} // namespace coalesce::launcher_text
