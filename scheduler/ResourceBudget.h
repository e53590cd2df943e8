#pragma once
// The limits a schedule must fit: checked for every target, so that a CPU
// run in CI already rejects a schedule the GPU could not launch.

namespace coalesce {

struct ResourceBudget {
  int max_threads_per_block = 1024;
  /// Static shared memory per block (the launch limit without opting in).
  int shared_bytes = 48 * 1024;
  /// Register-array elements per thread (e.g. an 8x8 accumulator is 64);
  /// beyond this ptxas spills to local memory.
  int register_elements_per_thread = 128;
};

} // namespace coalesce
