#pragma once
// Substitutes every Func scheduled inline (the default for pure Funcs that
// are not the output) into its callers, and drops it from the environment.

#include "scheduler/Environment.h"

namespace coalesce {

void inline_funcs(Environment &env);

} // namespace coalesce
