#pragma once
// Lowering pass: the output's two GPU block loops, when its schedule asks
// for gpu_block_groups(G), run in groups of G block rows. The loops keep
// their extents and become a linear block index that is mapped back to a
// row and a column:
//
//   for bi in gpu_block.y(0, R):          for bi.grouped in gpu_block.y(0, R):
//     for bj in gpu_block.x(0, C):   ->     for bj.grouped in gpu_block.x(0, C):
//       body                                  let block.linear = bi.grouped*C + bj.grouped
//                                             let bi = row of block.linear in its group
//                                             let bj = column of block.linear
//                                             body
//
// Consecutive blocks walk down a column of G blocks before moving right, so
// the blocks resident together read G rows of A and few column panels of B
// (L2 hits instead of memory reads). A permutation of the blocks, which run
// independently: the result is the same, on the CPU too, which runs the
// permuted order.

#include "scheduler/Environment.h"

namespace coalesce {

Stmt group_gpu_blocks(const Stmt &s, const Environment &env);

} // namespace coalesce
