#pragma once
// The legality of a reduction mapped onto warp MMA instructions (Stage::mma):
// the update is exactly a sum of products of the instruction's operand types
// into an f32 accumulator, the stage allows reassociation, its loops are
// still the ones mma_tile and mma made, and a K that the k step may not
// divide is zero-filled.

#include "scheduler/Environment.h"

namespace coalesce {

/// After inlining, so that the update's value is what the MMA computes.
void check_mma(const Environment &env);
} // namespace coalesce
