// gpu_consumer_schedule(ConsumerSchedule::PingPong): two groups of MMA
// warps take a persistent block's tiles in turn
// (scheduler/AlternateConsumerWarpgroups.h). On the CPU: the double
// reference at whole and ragged tiles, K = 1 / 3, the same bits as the
// schedule without it; ptxas assembles the kernel a
// GPU launch runs; the schedules it cannot apply to are refused.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "scheduler/SpecializeSizes.h"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

MmaTiling ping_pong_tiling(int blocks, ConsumerSchedule schedule = ConsumerSchedule::PingPong) {
  return ping_pong_mma_tiling(MmaKind::BF16_wgmma_m64k16, blocks, schedule);
}

Buffer run_on_cpu(Pipeline &pipeline, const GemmData &data, int M, int N, int K) {
  Buffer out({M, N}, BFloat(16));
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
  return out;
}

} // namespace

TEST_CASE("ping-pong consumers: the double reference, and the bits of the schedule without them") {
  for (int blocks : {1, 3}) {
    CAPTURE(blocks);
    Gemm g = coalesce::testing::bf16_scheduled(ping_pong_tiling(blocks));
    Pipeline pipeline(g.out);
    const std::string nest = pipeline.loop_nest();
    INFO(nest);
    // Eight MMA warps, each group taking the tiles of its parity, and the
    // groups' main loops ordered by the named barriers.
    CHECK_HAS(nest, "warp/4 == ");
    CHECK_HAS(nest, "group_barrier_sync(");
    CHECK_HAS(nest, "group_barrier_arrive(");
    // The same arithmetic, one group of MMA warps.
    Gemm t = coalesce::testing::bf16_scheduled(ping_pong_tiling(blocks, ConsumerSchedule::Together));
    Pipeline reference(t.out);
    for (auto [M, N, K] :
         std::vector<std::array<int, 3>>{{256, 384, 128}, {300, 200, 136}, {131, 264, 1}, {131, 264, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, Epilogue::BiasGelu, 17) < 4e-3);
      GemmData data = make_data(M, N, K, 23, BFloat(16));
      Buffer ours = run_on_cpu(pipeline, data, M, N, K), theirs = run_on_cpu(reference, data, M, N, K);
      CHECK(std::memcmp(ours.raw_data(), theirs.raw_data(), ours.size_in_bytes()) == 0);
    }
  }
}

TEST_CASE("ping-pong consumers: the kernels launches at 4096^3 and at multiples of 8 run assemble without losses") {
  if (!ptxas_available())
    return;
  Gemm g = coalesce::testing::bf16_scheduled(ping_pong_tiling(132));
  Pipeline pipeline(g.out);
  const GpuTarget target = parse_gpu_target("sm_90a");
  for (int64_t M : {4096, 5000}) {
    const int64_t N = M == 4096 ? 4096 : 3000, K = M == 4096 ? 4096 : 2000;
    CAPTURE(M);
    std::string ptx = pipeline.specialized_ptx(target, specializable_sizes({{"M", M}, {"N", N}, {"K", K}}));
    // The groups' named barriers (2 + tile % 2), 256 threads each.
    CHECK_HAS(ptx, "bar.sync");
    CHECK_HAS(ptx, "bar.arrive");
    coalesce::testing::check_assembled_cleanly(assemble_ptx(ptx, target));
  }
}

TEST_CASE("ping-pong consumers are refused where they cannot apply") {
  using coalesce::testing::user_error_of;
  auto refusal = [](const MmaTiling &t) {
    Gemm g = coalesce::testing::bf16_scheduled(t);
    return user_error_of([&] { Pipeline(g.out).loop_nest(); });
  };
  CHECK_HAS(refusal(ping_pong_tiling(0)), "so it needs a persistent grid: add gpu_persistent_blocks");
  MmaTiling sums = ping_pong_tiling(3);
  sums.tile_stores = TileStores::SumsThroughShared;
  CHECK_HAS(refusal(sums), "both would write the one staged output tile of gpu_tile_stores(sums)");
  MmaTiling no_producers = ping_pong_tiling(3);
  no_producers.producer_warps = no_producers.producer_registers = 0;
  CHECK_HAS(refusal(no_producers), "stage the inputs with TMA copies issued by ProducerWarps");
  MmaTiling two_warpgroups = ping_pong_tiling(3);
  two_warpgroups.warp_m = 64;
  CHECK_HAS(refusal(two_warpgroups), "the block's MMA warps here are 8 warps");
  Gemm h = coalesce::testing::bf16_scheduled(ping_pong_tiling(3, ConsumerSchedule::Together));
  h.acc.gpu_consumer_schedule(ConsumerSchedule::PingPong);
  CHECK_HAS(user_error_of([&] { Pipeline(h.out).loop_nest(); }),
            "gpu_consumer_schedule(ping-pong) applies to the output's kernels; 'acc' is not the output");
}
