#pragma once
// How the warpgroup MMA's blocks store their tiles (gpu_tile_stores),
// checked on the GPU; see TileStoresCheck.cpp for what is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// The epilogue computed from staged sums (TileStores::SumsThroughShared)
/// against the direct stores of the same tiling, bit for bit, and against
/// the double reference; results go to Report.h.
void check_tile_stores(bench::Precision p);

/// The staged sums at a ragged shape on buffers of exactly the right size,
/// for compute-sanitizer.
void tile_stores_sanitizer_case();

} // namespace coalesce::gpu_check
