#pragma once
// Lowering pass 1: turns each Func's schedule into loops. The output's
// stages run at root; a Func computed at a consumer's loop is injected into
// that loop's body, over the consumer's inner loops (mirrored), before the
// consumer reads it; a root Func gets a full-size buffer around everything.
//
// Loop variables are qualified by Func and stage ("acc.s1.ko") so nests of
// different Funcs never capture each other's names; a later pass strips
// the qualifiers for printing. Split variables are rebuilt by lets in the
// innermost body; splits that may not divide get guards: on the store for a
// root Func's pure dimensions, on the whole update for a reduction.

#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

namespace coalesce {

Stmt build_loop_nest(const Environment &env);

/// The scratch buffers the nest uses besides the pipeline's own (a split
/// reduction's partial sums and tile counters), as arguments after the
/// others; empty without split_k.
std::vector<Argument> workspace_arguments(const Environment &env);

} // namespace coalesce
