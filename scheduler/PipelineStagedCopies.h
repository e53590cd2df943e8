#pragma once
// Lowering pass, right after stage_inputs_in_shared: the staging loops it
// left as PipelinedStaging marks (their tiles in two buffers or more)
// become pipelines, planned again from the loop as staging planned it:
//
//   two buffers (RegisterDoubleBuffer, AsyncCopies of 2 stages): the first
//   tile copied before the loop; each iteration
//   fetches the next tile (cp.async straight into the other buffer, or into
//   registers and stored after the body) while it reads this one, then one
//   barrier;
//
//   a cp.async pipeline of S slots (AsyncCopies, S >= 3): the first S - 1
//   tiles requested before the loop (fewer while warpgroup MMAs stay in
//   flight, mma_groups_in_flight); each iteration waits for its own tile's
//   copies and a barrier, requests the tile S - 1 ahead into the slot the
//   last iteration read, and computes;
//
//   TmaCopies: that cp.async pipeline, as the fallback of a TmaStaging mark
//   holding the loop, for lower_tma_pipelines to build the TMA's form.
//
// Slots come from the loop's variable; each request is one commit group,
// empty past the end, so that "all but the newest S - 2 groups are
// complete" always means "this tile is here". A pipeline needs a serial
// loop (a UserError naming the stage and the loop otherwise).

#include "scheduler/Environment.h"

namespace coalesce {

Stmt pipeline_staged_copies(const Stmt &s, const Environment &env);

} // namespace coalesce
