#pragma once
// The rules of a reduction split across GPU blocks (split_k). Any other
// split of a reduction across blocks is refused by gpu_blocks itself (a
// reduction loop is never mapped to blocks: each block would hold partial
// sums), and an epilogue fused at the slice loop by compute_at.

#include "scheduler/Environment.h"

namespace coalesce {

/// Rejects, with a UserError naming the rule, a split_k whose producer is
/// not a sum over the split variable alone, whose update does not
/// allow_reassociation (the slices change the summation order), whose
/// consumer is not the output, or whose fuse site is not the innermost of
/// the output's block loops (the slice loop goes just inside it) or leaves
/// no GPU dimension (z) for the slices. After inlining, so that the
/// producer's update is the one that runs.
void check_split_k(const Environment &env);

} // namespace coalesce
