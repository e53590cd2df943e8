#pragma once
// Lowering pass (split_k in SplitKMode::CombineKernel): after the output's
// nest, whose slices stored their partial sums and nothing else
// (split_reduction_across_blocks), a nest of its own, a second kernel on the
// GPU, adds each element's slices in slice order and runs the epilogue:
//
//   for kz_block in gpu_block.x(0, ceil(M*N / 256)):
//     for kz_thread in gpu_thread.x(0, 128):
//       allocate acc.sums[2] in registers
//       for kz_e in unrolled(0, 2):             (flat = (kz_block*2 + kz_e)*128 + kz_thread)
//         acc.sums[kz_e] = acc.partials[0, <i, j of min(flat, M*N - 1)>]
//       for kz_sum in unrolled(1, S - 1):
//         for kz_e in unrolled(0, 2):
//           acc.sums[kz_e] = acc.sums[kz_e] + acc.partials[kz_sum, <i, j of min(flat, M*N - 1)>]
//       for kz_e in unrolled(0, 2):
//         if flat < M*N:
//           out[flat / N, flat % N] = f(acc.sums[kz_e])   (the output's definition at that point,
//                                                            acc(i, j) read from the sums)
//
// Why: with the last block of a tile combining it, a large tile cut into
// many slices waits for one block to read every slice of it (128 x 256
// tiles in 66 slices: 8.6 MB through one multiprocessor). Here every thread
// of the grid sums a few elements, each thread's loads of all its slices in
// flight at once. Each element still adds its slices 0, 1, ..., S - 1 in
// turn: the bits of the deterministic combine. Consecutive threads take
// consecutive elements of the output, so every load and store of a warp is
// one run of memory. check_split_k made sure the output's definition reads
// no Func but the split one (and inputs, which check_input_reads keeps
// inside their extents for every point of the output).

#include "scheduler/Environment.h"

namespace coalesce {

/// The pass: `s` followed by the combine's nest, for an output whose split
/// combines in a kernel of its own; `s` as it is otherwise.
Stmt add_slice_combine_kernel(const Stmt &s, const Environment &env);

} // namespace coalesce
