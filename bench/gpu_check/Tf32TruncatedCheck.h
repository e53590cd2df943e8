#pragma once

namespace coalesce::gpu_check {

/// The truncating tf32 kinds (MmaKind::TF32Truncated_m16n8k8,
/// TF32Truncated_wgmma_m64k8), which feed the tensor cores f32 bits as they
/// lie. What the library assumes of the hardware, measured bit for bit:
/// at K = 1 (one product, exact in f32 for tf32 operands) every output
/// element equals truncate_to_tf32(a) * truncate_to_tf32(b), the host's
/// result; and at K = 1 the products of special values (signed zeros,
/// subnormals, overflow and underflow, infinities, NaNs, low bits that
/// truncation drops), bit for bit against the host's run. Then the warp MMA and the warpgroup MMA (cp.async copies, the
/// TMA reading A and an N x K B as they lie, a K x N B through its
/// transposed copy, the default tiling) at ragged shapes and the
/// K = 1 / K = 3 pair with bias + GELU, against the double reference on
/// truncated operands, every row.
void check_tf32_truncated();
/// Each path once at one ragged shape (131 x 133 x 67; the TMA's at
/// 131 x 136 x 200), for compute-sanitizer.
void tf32_truncated_sanitizer_case();

} // namespace coalesce::gpu_check
