#pragma once
// Consumer schedules (gpu_consumer_schedule) checked on the GPU; see
// ConsumerScheduleCheck.cpp for what is compared.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// Ping-pong against the same tiling with one group of MMA warps, bit for
/// bit, and against the double reference; results go to Report.h.
void check_consumer_schedules(bench::Precision p);

/// Ping-pong at a ragged and an aligned shape on buffers of exactly the
/// right size, for compute-sanitizer.
void consumer_schedule_sanitizer_case();

} // namespace coalesce::gpu_check
