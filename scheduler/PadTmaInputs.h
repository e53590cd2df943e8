#pragma once
// TmaCopies::padded_copy: an input is copied first, by a kernel of
// its own, into a workspace the TMA can read, and the pipeline's TMA reads
// that copy. Its rows are padded with zeros to 128-byte multiples
// (kTmaCopyRowBytes: a bf16 row of 4097 elements is not even a 16-byte
// one, so the TMA cannot describe the input itself; a row of 3000 is, but
// its boxes' rows split the L2's sectors):
//
//   for A_row in gpu_block.x(0, M):  # a kernel of its own (out_A_padded)
//     for A_thread in gpu_thread.x(0, 256):
//       for A_step in serial(0, (Kp + 2047) / 2048):
//         piece[e] = col < K ? A[row, min(col, K - 1)] : 0   for e in 0..7,
//         then A_padded[row, col] = piece[e] where col < Kp,
//         with col = A_step * 2048 + e * 256 + A_thread
//   <the output's nest, its TMA copies reading A_padded>
//
// with Kp = K rounded up to whole 128 bytes. The operands of a tf32
// warpgroup MMA are also rounded to tf32 there (the instruction multiplies
// the bits it finds in shared memory, and the TMA copies them as they are),
// and its B is stored transposed, N x Kp, K-major as the instruction reads
// it (the TMA copies boxes as they lie in memory), through 32 x 32 tiles in
// shared memory so that both the reads and the writes are whole rows:
//
//   for B_tile in gpu_block.x(0, ceil(N / 32) * ceil(Kp / 32)):
//     allocate B_transpose[32][33] in shared
//     B_transpose[y + 8e][x] = round_to_tf32(B[k0 + y + 8e, n0 + x]), 0 outside B
//     barrier
//     B_padded[n0 + y + 8e, k0 + x] = B_transpose[x][y + 8e]   where inside
//
// A copy made only where the input's rows are ragged
// (PaddedCopy::WhereRowsAreRagged) has no rows where they are whole 16-byte
// multiples, M = select(K % 8 == 0, 0, M) above: its kernel's grid is empty
// and it is not launched, and the TMA reads the input.
//
// Each copy is a nest of its own before the output's, so on the GPU a
// kernel of its own that completes before the output's starts; the host
// runs the same statements. The padded columns hold zeros, so reading the
// copy as a Kp-column input (the tensor map's extent) adds nothing past K,
// exactly as the TMA's zero fill past the input's end does.

#include "scheduler/Environment.h"

namespace coalesce {

/// `s` after the copy nests of the padded inputs.
Stmt pad_tma_inputs(const Stmt &s, const Environment &env);

} // namespace coalesce
