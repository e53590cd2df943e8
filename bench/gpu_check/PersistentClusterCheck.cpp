// Persistent grids in clusters: the blocks of a cluster walk a persistent
// grid's tiles in step, two (or four) consecutive block rows of one block
// column at a time, and share B's tiles (TmaCopies::multicast), the
// pipeline running across each block's tiles. Per 16-bit precision:
//
//   - 128 x 256 tiles of two MMA warpgroups fed by a producer warpgroup
//     that keeps 40 registers, in clusters of 2 on grids of a block per
//     multiprocessor, of 8 and of 4 blocks (each block walks several tiles
//     even at small shapes), and in clusters of 4 on 8 blocks;
//   - ping-pong consumers (two groups of one 128-row warpgroup taking the
//     tiles in turn) in clusters of 2;
//
// each at whole tiles (512x768x256) and at 4096^3 (the kernel specialized
// for sizes that are multiples of 16), at ragged tiles whose rows are whole
// 16-byte vectors (515x776x259), at rows that are not (515x777x259: each
// block's own cp.async copies), an odd number of block rows (a cluster's
// step past the output's rows) and the K = 1 / K = 3 pair; each against the
// same tiling without clusters: the same bits, since every tile is computed
// whole by one block in the same order, and against the double reference
// on 8 sampled rows (SameBitsCheck.h).

#include "bench/gpu_check/PersistentClusterCheck.h"

#include "bench/gpu_check/SameBitsCheck.h"
#include "bench/reference/CublasReference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/GpuDevice.h"

#include <cstdio>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;

// The 128 x 256 tiles of two 64 x 256 MMA warpgroups with a producer
// warpgroup keeping 40 registers, four stages, direct stores.
MmaTiling wide_tiling(Precision p, int blocks) {
  // Ping-pong's recipe (128 x 128 of one 128-row warpgroup, four stages,
  // producers, direct stores) with the default's tile and warpgroups.
  MmaTiling t = ping_pong_mma_tiling(bench::mma_kind(p, true), blocks, ConsumerSchedule::Together);
  t.block_n = t.warp_n = 256;
  t.warp_m = 64;
  t.producer_registers = 40;
  return t;
}

void check_clusters(Precision p, MmaTiling unclustered, int cluster, const std::vector<BitsShape> &shapes,
                    const std::string &form) {
  MmaTiling clustered = unclustered;
  clustered.cluster_blocks = cluster;
  const std::string name = std::string(reference::precision_name(p)) + " " + form + ", " +
                           std::to_string(unclustered.persistent_blocks) + " persistent blocks in clusters of " +
                           std::to_string(cluster);
  check_same_bits_of_tilings(p, clustered, unclustered, shapes, name, "the bits without clusters");
}

} // namespace

void check_persistent_clusters(Precision p) {
  if (p == Precision::FP32 || p == Precision::TF32 || !target_for_current_device().has_warpgroup_mma())
    return;
  std::printf("\n==== %s: persistent grids in clusters ====\n", reference::precision_name(p));
  const int sms = gpu::Device::get().sm_count() / 2 * 2;
  for (int blocks : {sms, 8, 4})
    check_clusters(p, wide_tiling(p, blocks), 2, kPersistentGridShapes, "128x256 tiles");
  check_clusters(p, wide_tiling(p, 8), 4, kPersistentGridShapes, "128x256 tiles");
  check_clusters(p, ping_pong_mma_tiling(bench::mma_kind(p, true), sms, ConsumerSchedule::PingPong), 2,
                 kPersistentGridShapes, "ping-pong");
}

void persistent_cluster_sanitizer_case() {
  // Ragged (the general kernel) and aligned (the specialized one).
  const std::vector<BitsShape> shapes = {{131, 264, 200}, {256, 384, 192}};
  check_clusters(Precision::BF16, wide_tiling(Precision::BF16, 4), 2, shapes, "128x256 tiles (sanitizer)");
  check_clusters(Precision::BF16,
                 ping_pong_mma_tiling(bench::mma_kind(Precision::BF16, true), 4, ConsumerSchedule::PingPong), 2, shapes,
                 "ping-pong (sanitizer)");
}

} // namespace coalesce::gpu_check
