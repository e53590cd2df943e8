#pragma once
// The one size limit every check shares. Loop bounds and buffer indices are
// 32-bit integers in the generated code; keeping every extent, split factor
// and buffer element count at most 2^30 keeps each intermediate below 2^31:
// ceil(extent / factor), computed as (extent + factor - 1) / factor, and a
// tile's overhang past a ragged edge (at most one factor) included.

#include <cstdint>

namespace coalesce {

/// 2^30: the largest extent, split factor and buffer element count.
constexpr int64_t kMaxExtent = int64_t(1) << 30;
/// How messages write kMaxExtent.
constexpr const char *kMaxExtentText = "2^30 (1073741824)";

} // namespace coalesce

namespace coalesce {

/// The most copies unrolling may make of one statement: the product of the
/// extents of the unrolled loops around it. Compile time grows faster than
/// the code (a GEMM step of 8 x 8 x 16 copies compiles in about 4 s on the
/// host, 8 x 8 x 32 in minutes), so a larger request is a UserError
/// instead of a compile that seems to hang.
constexpr int64_t kMaxUnrolledCopies = 1024;

} // namespace coalesce
