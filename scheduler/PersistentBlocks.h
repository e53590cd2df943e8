#pragma once
// Lowering pass: the output's two GPU block loops, when its schedule asks
// for gpu_persistent_blocks(P), become a grid of at most P blocks, each
// walking the tiles P apart in the linear (row-major, or grouped) order:
//
//   for bi in gpu_block.y(0, R):        for bi_persistent in gpu_block.x(0, min(R*C, P)):
//     for bj in gpu_block.x(0, C):  ->    for bi_tile in serial(0, (R*C - bi_persistent + P - 1)/P):
//       body                                let bi.linear = bi_persistent + bi_tile*P
//                                           let bi = bi.linear/C
//                                           let bj = bi.linear % C
//                                           body
//
// A batch's three block loops (b in z around bi and bj) are walked alike:
// let b = tile_index/(R*C), bi = tile_index/C % R, bj = tile_index % C.
// Block b computes tiles b, b + P, ..., each exactly once, so the result is
// the same (the CPU runs the same loops). With gpu_cluster(bi, K) the grid
// walks whole clusters: block b is rank b % K of cluster b / K, the tiles'
// order counts bi in steps of K, and the cluster's blocks take bi = K*q +
// rank of the same step q (the other loops' values alike), so they walk
// the same number of tiles in step and share every tile that does not
// depend on bi (TmaCopies::multicast); the grid is min(tiles / K, P / K) * K
// blocks, P a multiple of K (check_clusters). After group_gpu_blocks, whose
// grouped order it then follows. The output's block loops must be two, rows
// (y) around columns (x), or three, a batch (z) around both, with none
// inside: split_k's slice loop is refused.

#include "scheduler/Environment.h"

namespace coalesce {

Stmt make_blocks_persistent(const Stmt &s, const Environment &env);

} // namespace coalesce
