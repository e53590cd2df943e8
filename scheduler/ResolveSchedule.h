#pragma once
// Settles where each Func is computed and checks the schedule as a whole,
// before any loop is built: defaults (pure Funcs inline, reductions at
// root, the output at root), compute_at sites, storage, reassociation of
// reduction loops, and shared-memory staging requests.

#include "scheduler/Environment.h"

namespace coalesce {

/// Throws a UserError naming the Func, the loop and the rule broken.
void resolve_schedule(Environment &env);

} // namespace coalesce
