#pragma once
// Lowering pass, right after stage_inputs_in_shared: each staging loop whose
// tiles the tensor memory accelerator copies (TmaCopies), left by staging
// as a TmaStaging mark holding the loop and its cp.async pipeline, becomes
// the TMA's pipeline (StageWithTma.h): a full mbarrier per slot whose
// phases come from the loop's variable; the copies issued by the MMA
// warps' first thread, or by producer warps of their own with an empty
// mbarrier per slot, the points of their program marked for
// reallocate_registers (ProducerBoundary); multicast tiles shared by the blocks of a cluster; on a
// persistent grid, one pipeline across the block's tiles, its barriers set
// up around the tile loop. The cp.async pipeline stays the branch the
// kernel takes where the TMA cannot describe an input.
//
//   tma_staging of ko:                  allocate A_shared, B_shared, A_full[S] (, A_empty[S])
//     for ko: ... A(i, k) ...     ->      if <every row a whole 16 bytes>: <the TMA pipeline over ko>
//   its cp.async pipeline: ...            else: <the cp.async pipeline>
//
// The TMA's rules live here: a box starts each row at a 16-byte multiple,
// a multicast tile is the same for every block of the cluster.

#include "scheduler/Environment.h"

namespace coalesce {

Stmt lower_tma_pipelines(const Stmt &s, const Environment &env);

} // namespace coalesce
