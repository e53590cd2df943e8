#pragma once

namespace coalesce::gpu_check {

/// Two reductions fused into one nest (fuse_reduction_with: a SwiGLU's gate
/// and up projections, examples/SwiGlu.h) on the FFMA path, unstaged and
/// with x, Wg and Wu staged in each pipeline (x copied once for both
/// sums), f32 and bf16 inputs; on the warp MMA and the warpgroup MMA
/// (TMA, and padded copies; bf16, and f16 in with f32 out), one tile of x
/// feeding both sums' instructions; at ragged shapes and the K = 1 / K = 3
/// pair, against the double reference on every element.
void check_fused_reductions();
/// The fused SwiGLU's warpgroup kernel once through the TMA and once with
/// padded copies, for compute-sanitizer.
void swiglu_sanitizer_case();

} // namespace coalesce::gpu_check
