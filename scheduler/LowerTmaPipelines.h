#pragma once
// Lowering pass, right after stage_inputs_in_shared: each staging loop whose
// tiles the tensor memory accelerator copies (TmaCopies), left by staging
// as a TmaStaging mark holding the loop and its cp.async pipeline, becomes
// the TMA's pipeline (StageWithTma.h): a full mbarrier per slot whose
// phases come from the loop's variable; the copies issued by the MMA
// warps' first thread, or by producer warps of their own with an empty
// mbarrier per slot (and with ProducerWarps::registers, register
// reallocation); multicast tiles shared by the blocks of a cluster; on a
// persistent grid, one pipeline across the block's tiles, its barriers set
// up around the tile loop. The cp.async pipeline stays the branch the
// kernel takes where the TMA cannot describe an input.
//
//   tma_staging of ko:                  allocate A_shared, B_shared, A_full[S] (, A_empty[S])
//     for ko: ... A(i, k) ...     ->      if <every row a whole 16 bytes>: <the TMA pipeline over ko>
//   its cp.async pipeline: ...            else: <the cp.async pipeline>
//
// The TMA's rules live here: a box starts each row at a 16-byte multiple,
// a multicast tile is the same for every block of the cluster, register
// reallocation needs the launch's registers known and no barrier of the
// whole block after the producers leave (split_k's combine; a persistent
// grid whose pipeline cannot run across its tiles).

#include "scheduler/Environment.h"

namespace coalesce {

Stmt lower_tma_pipelines(const Stmt &s, const Environment &env);

} // namespace coalesce
