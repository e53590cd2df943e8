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

/// The input an MMA stage reads as its A operand (row, k) and as B (k, column).
struct MmaOperands {
  std::string a, b;
};
/// For a stage that check_mma accepted.
MmaOperands mma_operands(const FuncContents &func, size_t stage);

} // namespace coalesce
