#pragma once
// The limits a schedule must fit: checked for every target, so that a CPU
// run in CI already rejects a schedule the GPU could not launch.

namespace coalesce {

struct ResourceBudget {
  int max_threads_per_block = 1024;
  /// Shared memory per block: 99 KiB, what every supported GPU gives a
  /// block that opts in (sm_86 and sm_89; sm_80 163 KiB, sm_90 227 KiB).
  /// Kernels over 48 KiB take it as dynamic shared memory (LoweredFunc.h).
  int shared_bytes = 99 * 1024;
  /// Register-array elements per thread (e.g. an 8x8 accumulator is 64);
  /// beyond this ptxas spills to local memory.
  int register_elements_per_thread = 128;
};

} // namespace coalesce
