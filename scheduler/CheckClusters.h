#pragma once
// The rules of gpu_cluster and SharedLayout::multicast: blocks run in
// clusters along one block loop of the output, the outer loop of a split
// (whose guard then covers the blocks past the last tile); a multicast
// input is staged with the TMA's copies, issued by the MMA warps' first
// thread, in an output that has clusters. Whether a multicast tile is the
// same for every block of its cluster is stage_inputs_in_shared's to check
// (it knows where each tile starts).

#include "scheduler/Environment.h"

namespace coalesce {

void check_clusters(const Environment &env);

} // namespace coalesce
