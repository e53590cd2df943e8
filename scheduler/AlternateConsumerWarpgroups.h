#pragma once
// Lowering pass (gpu_consumer_schedule(ConsumerSchedule::PingPong)): on a
// persistent grid with producer warps, a second group of MMA warps that
// takes every other tile of the block, so that one group's epilogue runs
// beside the other's main loop.
//
//   for warp in gpu_thread.y(0, W):        for warp in gpu_thread.y(0, 2W):
//     body(warp)                     ->      if warp / W == tile % 2:
//                                              body(warp % W)     (register arrays keep warp)
//   for warp in gpu_thread.y(W, P):        for warp in gpu_thread.y(2W, P):  # producers (min, extent)
//     body(warp)                              body(warp - W)
//
// The pipeline's counters stay (tile, k step): the producers fill every
// tile's slots in order, each fill consumed by one group of W warps (the
// empty barriers' count). The groups' main loops run in tile order: a
// group syncs on named barrier 2 + tile % 2 before its tile's first wait
// for a full slot (not on the first tile) and arrives on the other's after
// its last, so a group never waits on a slot's parity two phases ahead of
// the other group's (the parity of a phase two fills later is the same).

#include "scheduler/Environment.h"

namespace coalesce {

Stmt alternate_consumer_warpgroups(const Stmt &s, const Environment &env);

} // namespace coalesce
