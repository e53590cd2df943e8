#pragma once
// SharedLayout::tma_padded_copy: an input whose rows the TMA cannot
// describe (not whole 16-byte multiples, such as a bf16 row of 4097
// elements) is copied first into a workspace whose rows are, with zeros
// after each row's end, and the pipeline's TMA reads that copy:
//
//   for A_row in gpu_block.x(0, M):  # a kernel of its own (out_A_padded)
//     for A_thread in gpu_thread.x(0, 256):
//       for A_step in serial(0, (K8 + 2047) / 2048):
//         piece[e] = col < K ? A[row, min(col, K - 1)] : 0   for e in 0..7,
//         then A_padded[row, col] = piece[e] where col < K8,
//         with col = A_step * 2048 + e * 256 + A_thread
//   <the output's nest, its TMA copies reading A_padded>
//
// with K8 = K rounded up to whole 16 bytes. Each copy is a nest of its own
// before the output's, so on the GPU a kernel of its own that completes
// before the output's starts; the host runs the same statements. The
// padded columns hold zeros, so reading the copy as a K8-column input
// (the tensor map's extent) adds nothing past K, exactly as the TMA's
// zero fill past the input's end does.

#include "dsl/IR.h"
#include "scheduler/Environment.h"
#include "scheduler/LoweredFunc.h"

#include <vector>

namespace coalesce {

/// The inputs some stage stages with SharedLayout::tma_padded_copy, each
/// once, in name order.
std::vector<const InputContents *> tma_padded_inputs(const Environment &env);

/// The extents of an input's padded copy: its own, the innermost rounded
/// up to whole 16 bytes.
std::vector<Expr> tma_padded_extents(const InputContents &input);

/// The workspace arguments of the padded copies (Argument::is_workspace:
/// scratch memory the runtime allocates, never bound by name).
std::vector<Argument> tma_padded_workspaces(const Environment &env);

/// `s` after the copy nests of the padded inputs.
Stmt pad_tma_inputs(const Stmt &s, const Environment &env);

} // namespace coalesce
