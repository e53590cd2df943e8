#pragma once
// Persistent grids in clusters (gpu_persistent_blocks with gpu_cluster and
// B multicast) checked on the GPU; see PersistentClusterCheck.cpp for what
// is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// Each clustered persistent tiling against the same tiling without
/// clusters, bit for bit, and against the double reference; results go to
/// Report.h.
void check_persistent_clusters(bench::Precision p);

/// Clustered persistent grids at a ragged and an aligned shape on buffers
/// of exactly the right size, for compute-sanitizer.
void persistent_cluster_sanitizer_case();

} // namespace coalesce::gpu_check
