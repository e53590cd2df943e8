#pragma once
// Defence in depth, after tensorize_mma: fails with an internal error if an
// MMA statement's first factor is not the instruction's row operand. The
// GPU back end gathers the factors' fragments by position (the first as
// the instruction's A, whose rows are its M; the second as its B, whose
// rows are its N), while the CPU runs the update as written: a first
// factor whose elements depend on the column (mma.n), or a second that
// depends on the row (mma.m), would make the two disagree, the GPU
// computing the transposed product where the tile's rows run along j.

#include "dsl/IR.h"

namespace coalesce {

void verify_mma_operands(const Stmt &s);

} // namespace coalesce
