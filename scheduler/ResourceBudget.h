#pragma once
// The limits a schedule must fit: checked for every target, so that a CPU
// run in CI already rejects a schedule the GPU could not launch.

#include <algorithm>

namespace coalesce {

/// The registers per thread a launch of `block_threads` threads gives,
/// `blocks_per_sm` blocks to a multiprocessor of 64K registers: what ptxas
/// allocates at entry (a multiple of 8, at most 248 of the 255 a thread
/// may have).
inline int launch_registers(int block_threads, int blocks_per_sm) {
  int per_thread = 65536 / (block_threads * blocks_per_sm);
  return std::min(per_thread / 8 * 8, 248);
}

/// Registers a warpgroup-MMA thread needs beside its accumulators
/// (descriptors, addresses, loop counters, barrier state, the epilogue's
/// temporaries): ptxas refused a tf32 kernel of 128 accumulators per thread
/// at 128 registers ("Try to compile with register target of 154 or
/// higher": 26 more).
constexpr int kRegistersBesideAccumulators = 32;

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
