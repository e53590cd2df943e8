#pragma once

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// A warpgroup GEMM + bias + GELU whose reduction starts past column 0
/// (RDom(start, K - start)) on the TMA's copies, at a start the TMA takes
/// (a 16-byte multiple: RDom(2, K - 2) trapped the GPU and is refused
/// before lowering), alone and split across blocks, at ragged shapes and
/// the K = 1 / K = 3 pair past the start, against the double reference.
void check_reduction_start(bench::Precision p);

} // namespace coalesce::gpu_check
