#pragma once
// Lowering pass: a reduction split across GPU blocks (split_k), as loops.
// It runs after build_loop_nest, which left the fuse site as for any
// compute_at (the producer allocated, produced, then consumed) with each
// slice's reduction over its own range of the split variable
// (scheduler/SplitKSlices.h), and rewrites the site:
//
//   for bj in gpu_block.x:                  for bj in gpu_block.x:
//     allocate acc                            for kz in gpu_block.z(0, S):
//     acc = init; acc += A*B (all of k)  ->     allocate acc
//     for ti ...: out = f(acc)                  acc = select(kz == 0, init, 0); acc += A*B (slice kz of k)
//                                               for ti ...: acc.partials[bi, bj, kz, r] = acc[r]
//                                               let last = last_arrival(acc.tile_counters[bi, bj], S)
//                                               if last == 1:
//                                                 for ti ...: acc[r] = partials[bi, bj, 0, r]
//                                                 for s in 1..S:
//                                                   for ti ...: acc[r] = acc[r] + partials[bi, bj, s, r]
//                                                 for ti ...: out = f(acc)
//
// `r` is the accumulator's element as one index with the thread loops'
// dimensions fastest (PartialsLayout::ByRegister, scheduler/SplitKSlices.h):
// a warp's store or load of one register is one contiguous run of 128
// bytes, and every element of the tile, the output's edge or not, has its
// place, so neither the stores nor the loads are guarded.
// The blocks of one output tile run in any order on the GPU; the one that
// arrives last (behind a per-tile counter, which it resets) combines the
// slices in slice order and runs the epilogue, once per element. It reads
// the tile slice by slice, so that each thread has one slice's loads of all
// its elements in flight at once (element by element, the loads of a tile
// waited for the memory once per element: 16 x 4096 x 4096 split 4 ways,
// 32 elements per thread). Serially
// (the CPU), slice S - 1 is the last. In atomic mode the slices add into one
// zeroed tile with atomic_add, and the last block reads it and zeroes it.
// In combine-kernel mode the slices only store their partial sums, at the
// output's coordinates ([kz, i, j]): no counter, no combine here
// (scheduler/CombineSlicesKernel.h adds it, reading them element by
// element).

#include "scheduler/Environment.h"

namespace coalesce {

/// The pass: the fuse site of the output's split producer becomes the slice
/// loop above (build_loop_nest has given each slice's reduction its range,
/// scheduler/SplitKSlices.h); a nest without split_k is returned as it is.
Stmt split_reduction_across_blocks(const Stmt &s, const Environment &env);

} // namespace coalesce
