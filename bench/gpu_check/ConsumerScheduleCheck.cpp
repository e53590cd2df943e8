// Ping-pong consumers (gpu_consumer_schedule(ConsumerSchedule::PingPong)):
// two groups of one 128-row MMA warpgroup each taking a persistent block's
// 128 x 128 tiles in turn, fed through four stages by a producer warpgroup
// that keeps 40 registers, on grids of a block per multiprocessor, of 7
// and of 3 blocks (each group takes several tiles even at small shapes),
// per 16-bit precision:
//
//   - at whole tiles (512x768x256) and at 4096^3 (the kernel specialized
//     for sizes that are multiples of 16 runs there), at ragged tiles whose
//     rows are whole 16-byte vectors (515x776x259), at rows that are not
//     (515x777x259: the cp.async copies), and the K = 1 / K = 3 pair;
//   - each against the same tiling with one group of MMA warps (the
//     producers keeping their registers): the same bits, since each tile is
//     computed whole by one group in the same order, and against the double
//     reference on 8 sampled rows (SameBitsCheck.h).

#include "bench/gpu_check/ConsumerScheduleCheck.h"

#include "bench/gpu_check/SameBitsCheck.h"
#include "bench/reference/CublasReference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "runtime/GpuDevice.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;


MmaTiling tiling(Precision p, int blocks, ConsumerSchedule schedule) {
  return ping_pong_mma_tiling(bench::mma_kind(p, true), blocks, schedule);
}

void check_grid(Precision p, int blocks, const std::vector<BitsShape> &shapes, const std::string &suffix) {
  const MmaTiling ping_pong = tiling(p, blocks, ConsumerSchedule::PingPong);
  const std::string name = std::string(reference::precision_name(p)) + " ping-pong, " + std::to_string(blocks) +
                           " persistent blocks" + suffix;
  check_same_bits_of_tilings(p, ping_pong, tiling(p, blocks, ConsumerSchedule::Together), shapes, name,
                             "one group's bits");
}

} // namespace

void check_consumer_schedules(Precision p) {
  if (p == Precision::FP32 || p == Precision::TF32 || !target_for_current_device().has_warpgroup_mma())
    return;
  std::printf("\n==== %s: ping-pong consumers ====\n", reference::precision_name(p));
  for (int blocks : {gpu::Device::get().sm_count(), 7, 3})
    check_grid(p, blocks, kPersistentGridShapes, "");
}

void consumer_schedule_sanitizer_case() {
  // Ragged (the general kernel) and aligned (the specialized one).
  check_grid(Precision::BF16, 3, {{131, 264, 200}, {256, 384, 192}}, " (sanitizer)");
}

} // namespace coalesce::gpu_check
