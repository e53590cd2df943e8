#pragma once
// Legality of the algorithm itself, checked before any loop is built:
// every update is a reduction (the running value combined with one term by
// one associative operator), a sum adds nothing that is independent of its
// reduction variable (unless the user says so), and Funcs call each other at
// the caller's own coordinates.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError naming the Func, the definition and the rule broken.
void check_algorithm(const Environment &env);

} // namespace coalesce
