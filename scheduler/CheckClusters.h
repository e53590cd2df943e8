#pragma once
// The rules of gpu_cluster: blocks run in clusters along one block loop of
// the output, the outer loop of a split (whose guard then covers the blocks
// past the last tile), and not with split-K or grouped blocks; with a
// persistent grid, whose blocks walk the tiles by whole clusters, only of
// whole clusters. That a multicast input (TmaCopies::multicast) has clusters to
// share with is check_staging's rule; whether its tile is the same for
// every block of its cluster is lower_tma_pipelines' to check (it knows
// where each tile starts).

#include "scheduler/Environment.h"

namespace coalesce {

void check_clusters(const Environment &env);

} // namespace coalesce
