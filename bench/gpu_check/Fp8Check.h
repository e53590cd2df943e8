#pragma once

namespace coalesce::gpu_check {

/// The 8-bit floats on the GPU: every e4m3 / e5m2 code widened, and f32
/// probes (ties, subnormals, saturation, infinities, NaN) narrowed, bit for
/// bit against the runtime's conversions (dsl/NarrowFloat.h); an FP8 GEMM
/// on the FFMA path; and the FP8 warpgroup MMA (an FP8 linear layer with
/// per-row and per-column scales, bias and GELU, W stored N x K) with the
/// TMA's copies and padded copies, at ragged shapes and the K = 1 / K = 3
/// pair, against the double reference on every row.
void check_fp8();
/// The FP8 warpgroup MMA once each through the TMA, with padded copies
/// and with every thread's cp.async, for compute-sanitizer.
void fp8_sanitizer_case();

} // namespace coalesce::gpu_check
