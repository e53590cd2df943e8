#pragma once
// TmaCopies::padded_copy: an input is copied first, by a kernel of
// its own, into a workspace the TMA can read, and the pipeline's TMA reads
// that copy. Its rows are padded with zeros to 16-byte multiples (a bf16
// row of 4097 elements is not one, so the TMA cannot describe the input
// itself):
//
//   for A_row in gpu_block.x(0, M):  # a kernel of its own (out_A_padded)
//     for A_thread in gpu_thread.x(0, 256):
//       for A_step in serial(0, (K8 + 2047) / 2048):
//         piece[e] = col < K ? A[row, min(col, K - 1)] : 0   for e in 0..7,
//         then A_padded[row, col] = piece[e] where col < K8,
//         with col = A_step * 2048 + e * 256 + A_thread
//   <the output's nest, its TMA copies reading A_padded>
//
// with K8 = K rounded up to whole 16 bytes. The operands of a tf32
// warpgroup MMA are also rounded to tf32 there (the instruction multiplies
// the bits it finds in shared memory, and the TMA copies them as they are),
// and its B is stored transposed, N x K4, K-major as the instruction reads
// it (the TMA copies boxes as they lie in memory), through 32 x 32 tiles in
// shared memory so that both the reads and the writes are whole rows:
//
//   for B_tile in gpu_block.x(0, ceil(N / 32) * ceil(K4 / 32)):
//     allocate B_transpose[32][33] in shared
//     B_transpose[y + 8e][x] = round_to_tf32(B[k0 + y + 8e, n0 + x]), 0 outside B
//     barrier
//     B_padded[n0 + y + 8e, k0 + x] = B_transpose[x][y + 8e]   where inside
//
// Each copy is a nest of its own before the output's, so on the GPU a
// kernel of its own that completes before the output's starts; the host
// runs the same statements. The padded columns hold zeros, so reading the
// copy as a K8-column input (the tensor map's extent) adds nothing past K,
// exactly as the TMA's zero fill past the input's end does.

#include "dsl/IR.h"
#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

#include <vector>

namespace coalesce {

/// How one input is copied for the TMA.
struct TmaInputCopy {
  const InputContents *input = nullptr;
  /// Stored transposed (K-major): the B of a tf32 warpgroup MMA.
  bool transposed = false;
  /// Rounded to tf32: the operands of a tf32 warpgroup MMA.
  bool round_to_tf32 = false;
};

/// The inputs some stage stages with TmaCopies::padded_copy, each
/// once, in name order, with how each is copied (the same for every stage
/// that stages it, or a UserError).
std::vector<TmaInputCopy> tma_input_copies(const Environment &env);

/// The copy of `input` (an internal error where none is made).
TmaInputCopy tma_input_copy(const Environment &env, const std::string &input);

/// The extents of an input's copy, in the copy's own order (the input's,
/// reversed where it is transposed), the innermost rounded up to whole 16
/// bytes.
std::vector<Expr> tma_copy_extents(const TmaInputCopy &copy);

/// The workspace arguments of the copies (Argument::is_workspace: scratch
/// memory the runtime allocates, never bound by name).
std::vector<Argument> tma_padded_workspaces(const Environment &env);

/// `s` after the copy nests of the padded inputs.
Stmt pad_tma_inputs(const Stmt &s, const Environment &env);

} // namespace coalesce
