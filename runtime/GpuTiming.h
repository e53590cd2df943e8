#pragma once
// Timing a GPU kernel with CUDA events, as the benchmark does
// (bench/harness/bench_gemm.cpp, docs/performance.md): a warm-up run back to
// back for at least warmup_ms, then timed runs, each between its own pair of
// events with the L2 flushed before each; the median is the result. The
// autotuner ranks with a short form (quick_timing) and re-times its winner
// with the full one (benchmark_timing).

#include "runtime/GpuDevice.h"

#include <functional>

namespace coalesce {

struct TimingProtocol {
  double warmup_ms = 300; ///< the warm-up lasts at least this ...
  int min_warmup_runs = 4; ///< ... and at least this many runs
  int min_timed_runs = 30;
  int max_timed_runs = 200;
  /// Timed runs are added (between the two bounds) until they sum to about this.
  double target_timed_ms = 250;
};

/// The benchmark's protocol: 300 ms warm-up, 30 to 200 timed runs (about 250 ms).
TimingProtocol benchmark_timing();
/// For ranking candidates: 2 warm-up runs, 10 timed runs.
TimingProtocol quick_timing();

struct GpuTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int warmup_runs = 0, timed_runs = 0;
};

/// Times `run` (which launches and does not wait) under `protocol`; `flush`
/// is a buffer of at least twice the L2, written before each timed run.
GpuTiming time_gpu_runs(const std::function<void()> &run, gpu::DeviceBuffer &flush, const TimingProtocol &protocol);

/// A buffer large enough to evict the L2: max(2 x L2, 256 MiB).
gpu::DeviceBuffer make_l2_flush_buffer();

} // namespace coalesce
