#pragma once
// Replaces the innermost loops of a reduction mapped by Stage::mma (frag_i,
// frag_j and the instruction's k loop, with the store inside) by one WarpMma
// statement per instruction tile and k step.

#include "scheduler/Environment.h"

namespace coalesce {

/// After clamp_input_loads, so that the operands are final loads; before
/// thread fusion, so that the CPU runs the same statement the GPU does.
Stmt tensorize_mma(const Stmt &s, const Environment &env);

} // namespace coalesce
