#pragma once
// Lowering pass, host only (lower_for_host), before unroll_loops: an
// unrolled loop whose unrolling would make more than `max_copies` copies of
// its body (its extent times the copies its own unrolled loops make) runs
// as a serial loop instead; smaller unrolled nests are still unrolled.
//
// Why: unrolling exists for the GPU, where a register array must be
// indexed by constants to live in registers. On the host it only costs
// compile time: the bf16 warpgroup default's CPU check at 64x64x64 spent
// 8.5 s compiling its 32 x 2 x 2 unrolled epilogue and MMA fragments
// (2.3 s with them as loops). A loop runs its iterations in the order the
// copies would, so the result is the same, bit for bit; small register
// tiles (4 x 4) keep their unrolled form, and with it their registers.

#include "dsl/IR.h"

namespace coalesce {

/// The host's limit: a 4 x 4 register tile is unrolled, a 32-iteration
/// fragment loop is not.
constexpr int kMaxHostUnrolledCopies = 16;

Stmt roll_large_unrolled_loops(const Stmt &s, int max_copies = kMaxHostUnrolledCopies);

} // namespace coalesce
