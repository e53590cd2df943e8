#pragma once
#include "bench/common/Precisions.h"
namespace coalesce::gpu_check {
/// The epilogues that read more than the sum and a bias (examples/
/// ResidualGemm.h: gelu(acc + bias) + residual, acc * alpha + beta * C),
/// bf16, on the warp MMA and on sm_90a the warpgroup MMA with the library's
/// default tiling for 4096^3 (TMA copies, padded where the rows are ragged,
/// whole tiles stored through shared memory): at ragged shapes, shapes with
/// whole 128 x 256 tiles, and K = 0, 1, 3, against the double reference on
/// every row.
void check_extra_epilogues();
} // namespace coalesce::gpu_check
