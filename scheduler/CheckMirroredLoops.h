#pragma once
// A Func computed at a consumer's loop runs on the consumer's loops.

#include "scheduler/Environment.h"

namespace coalesce {

/// compute_at (and fuse_epilogue) give every stage of the Func the
/// consumer's loops below the site ("mirrored"): its values are produced
/// point for point where the consumer reads them, by the same thread. Those
/// loops stay the consumer's: in every stage they keep the consumer's order,
/// kinds and GPU mapping, unsplit, and no stage has pure loops of its own.
/// Only the stage's reduction loops may be split, mapped to nothing and
/// placed among them. Throws a UserError naming the stage, the loop and the
/// consumer to schedule instead. Needs placements resolved.
void check_mirrored_loops(const Environment &env);

} // namespace coalesce
