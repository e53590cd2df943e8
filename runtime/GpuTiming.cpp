#include "runtime/GpuTiming.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace coalesce {

TimingProtocol benchmark_timing() { return TimingProtocol{}; }

TimingProtocol quick_timing() {
  TimingProtocol quick;
  quick.warmup_ms = 0;
  quick.min_warmup_runs = 2;
  quick.min_timed_runs = 10;
  quick.max_timed_runs = 10;
  quick.target_timed_ms = 0;
  return quick;
}

GpuTiming time_gpu_runs(const std::function<void()> &run, gpu::DeviceBuffer &flush, const TimingProtocol &protocol) {
  GpuTiming t;
  auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  // Warm-up: back to back, synchronizing every few runs.
  for (;;) {
    run();
    ++t.warmup_runs;
    if (t.warmup_runs % 4 == 0 || t.warmup_runs == protocol.min_warmup_runs) {
      gpu::synchronize();
      if (t.warmup_runs >= protocol.min_warmup_runs && elapsed_ms() >= protocol.warmup_ms)
        break;
    }
  }
  double per_run = elapsed_ms() / t.warmup_runs;
  int runs = static_cast<int>(std::ceil(protocol.target_timed_ms / std::max(per_run, 1e-3)));
  runs = std::clamp(runs, protocol.min_timed_runs, protocol.max_timed_runs);

  gpu::EventTimer timer;
  std::vector<double> ms;
  for (int n = 0; n < runs; ++n) {
    flush.fill_bytes(static_cast<uint8_t>(n + 1)); // evicts what the last run left in the L2
    timer.start();
    run();
    timer.stop();
    ms.push_back(timer.elapsed_ms());
  }
  std::sort(ms.begin(), ms.end());
  t.timed_runs = runs;
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  return t;
}

gpu::DeviceBuffer make_l2_flush_buffer() {
  size_t l2 = static_cast<size_t>(std::max<int64_t>(gpu::Device::get().l2_bytes(), 0));
  return gpu::DeviceBuffer(std::max<size_t>(2 * l2, size_t(256) << 20));
}

} // namespace coalesce
