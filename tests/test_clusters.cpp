// gpu_cluster and TmaCopies::multicast: the output's blocks in clusters
// along one block loop, sharing the TMA copies of an input whose tile is
// the same for each of them. The CPU runs the same statements (each block
// receives the whole tile) against the double reference, with odd numbers
// of tiles (the block that rounds a cluster up computes nothing), ragged
// shapes and the K = 1 / K = 3 pair, with the MMA warps' first thread
// issuing the copies and with producer warps; the nest; the kernels
// through ptxas; the rules.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"
#include "scheduler/Environment.h"
#include "scheduler/SpecializeSizes.h"
#include "scheduler/VerifyTensorCopies.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// 64 x 64 tiles, TMA copies, clusters of `blocks` block rows sharing B.
MmaTiling cluster_tiling(int blocks, MmaKind kind = kKind) {
  MmaTiling t = coalesce::testing::one_tile_tiling(kind);
  REQUIRE(t.uses_tma());
  t.cluster_blocks = blocks;
  return t;
}

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 29);
}

} // namespace

TEST_CASE("blocks in clusters sharing B's tiles compute every tile once: odd tile counts, ragged shapes") {
  using Shapes = std::vector<std::array<int, 3>>;
  // 3 and 5 block rows: the last cluster has blocks past the output.
  for (auto [blocks, shapes] : std::vector<std::pair<int, Shapes>>{
           {2, {{1, 1, 1}, {130, 70, 136}, {190, 8, 72}}}, {4, {{300, 136, 200}}}}) {
    CAPTURE(blocks);
    Gemm g = coalesce::testing::bf16_scheduled(cluster_tiling(blocks));
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : shapes) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
  // tf32's transposed copy of B, multicast.
  Gemm t = coalesce::testing::mma_scheduled(cluster_tiling(2, MmaKind::TF32_wgmma_m64k8), Epilogue::BiasGelu,
                                            Float(32), Float(32));
  Pipeline tf32(t.out);
  GemmData data = make_data(190, 70, 97, 7);
  for (Buffer *b : {&data.a, &data.b})
    for (float &v : b->values())
      v = float_to_tf32(v);
  CHECK(coalesce::testing::cpu_error_against_reference(tf32, data, 190, 70, 97, Epilogue::BiasGelu, Float(32)) <
        1e-5);
}

TEST_CASE("A's tiles multicast along bj, and clusters of 8 from row-padded copies, compute every tile once") {
  // By hand: clusters of two block columns, which read the same tiles of A.
  Gemm g = coalesce::testing::mma_tiled(kKind, BFloat(16), BFloat(16));
  g.out.gpu_cluster(Var("bj"), 2);
  TmaCopies copies;
  copies.stages = 3;
  TmaCopies multicast = copies;
  multicast.multicast = true;
  RVar ko("ko"), kk("kk");
  g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, {}, multicast)
      .stage_in_shared(g.B, ko, {}, copies);
  Pipeline columns(g.out);
  CHECK_HAS(columns.loop_nest(), "for bj in gpu_block.x(0, ceil(ceil(N/64)/2)*2):");
  for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {70, 130, 131}}) {
    CAPTURE(M);
    CAPTURE(N);
    CHECK(error_against_reference(columns, M, N, K, Epilogue::None) < 4e-3);
  }
  if (ptxas_available())
    CHECK_HAS(columns.ptx(parse_gpu_target("sm_90a")), ".reqnctapercluster 2, 1, 1");
  // Eight block rows a cluster, B read from its row-padded copy.
  MmaTiling eight = cluster_tiling(8);
  eight.tma_padded_copies = PaddedCopies::Both;
  Gemm e = coalesce::testing::bf16_scheduled(eight);
  Pipeline rows(e.out);
  CHECK(error_against_reference(rows, 513, 20, 7) < 4e-3);
}

TEST_CASE("in clusters the fused epilogue still runs once per tile, after its reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(cluster_tiling(2), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 200, 136, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the nest shows the clusters: whole clusters of blocks, B's boxes multicast, barriers of the cluster") {
  Gemm g = coalesce::testing::bf16_scheduled(cluster_tiling(2));
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "for bi in gpu_block.y(0, ceil(ceil(M/64)/2)*2):");
  CHECK_HAS(nest, "tensor_copy B[0, bj*64] box 64x64 (0 outside B) multicast to the cluster's 2 blocks (this block's "
                  "32 rows) -> B_shared[0, 0, 0, 0], completes on A_full[0]");
  // A's tile depends on bi: each block copies its own.
  CHECK_HAS(nest, "tensor_copy A[bi*64, 0] box 64x64 (0 outside A) -> A_shared[0, 0, 0, 0]");
  // After the inits, after each step (before the refill), after the loop.
  size_t barriers = 0;
  for (size_t at = nest.find("cluster_barrier()"); at != std::string::npos; at = nest.find("cluster_barrier()", at + 1))
    ++barriers;
  CHECK(barriers >= 3);
  // Every block's barrier expects the whole tiles: 64 x 64 of A and of B.
  CHECK_HAS(nest, "mbarrier_expect_tx(A_full[0], 16384)");
  // The output's guard keeps the blocks past the last tile from storing.
  CHECK_HAS(nest, "if i < M:");
}

TEST_CASE("a clustered kernel assembles cleanly: cluster directives, multicast copies, cluster barriers") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling wide = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
  wide.cluster_blocks = 2;
  stage_values_where_sums_do_not_fit(wide);
  fit_output_tile_beside_stages(wide); // a cluster's tiles keep their own bytes: three stages
  for (const MmaTiling &t : {wide, cluster_tiling(4)}) {
    INFO(t.str());
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
    CHECK_HAS(ptx, ".explicitcluster");
    CHECK_HAS(ptx, str_cat(".reqnctapercluster 1, ", t.cluster_blocks, ", 1"));
    CHECK_HAS(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster");
    CHECK_HAS(ptx, "%cluster_ctarank");
    CHECK_HAS(ptx, "barrier.cluster.arrive.release.aligned;");
    CHECK_HAS(ptx, "barrier.cluster.wait.acquire.aligned;");
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
  // Blocks not in clusters keep plain launches.
  Gemm plain = coalesce::testing::bf16_scheduled(coalesce::testing::one_tile_tiling(kKind));
  CHECK(Pipeline(plain.out).ptx(parse_gpu_target("sm_90a")).find(".reqnctapercluster") == std::string::npos);
}

TEST_CASE("multicast with producer warps: every block's MMA warps release each slot in the whole cluster") {
  // A producer warp, a producer warpgroup, and one that reallocates
  // registers and leaves; 3 and 5 block rows (a block past the output in
  // the last cluster), ragged, K = 1 / K = 3, and K whose rows the TMA
  // cannot describe (the cp.async copies).
  for (auto [blocks, producers, registers] :
       std::vector<std::array<int, 3>>{{2, 1, 0}, {2, 4, 0}, {4, 4, 0}, {2, 4, 40}}) {
    CAPTURE(blocks);
    CAPTURE(producers);
    CAPTURE(registers);
    MmaTiling t = cluster_tiling(blocks);
    t.producer_warps = producers;
    t.producer_registers = registers;
    t.min_blocks_per_sm = registers > 0 ? 2 : 1;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{130, 70, 200}, {300, 136, 1}, {190, 72, 3}, {130, 64, 131}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
  MmaTiling t = cluster_tiling(2);
  t.producer_warps = 4;
  t.min_blocks_per_sm = 1;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  // Each slot waits for the release of the cluster's 2 x 4 MMA warps, each
  // of which arrives in both blocks; no barrier of the cluster per step,
  // one after the barriers' initialization (both roles), and the producer
  // waits for each slot's last release before the block may leave.
  CHECK_HAS(nest, "mbarrier_init(A_empty[0], 8)");
  CHECK_HAS(nest, "mbarrier_arrive(A_empty[(ko - 1) % 3], 2)");
  CHECK_HAS(nest, "mbarrier_arrive(A_empty[(ceil(K/64) - 1) % 3], 2)");
  CHECK_HAS(nest, "mbarrier_wait(A_empty[0], (ceil(K/64) - 1)/3*3/3 % 2)");
  size_t first = nest.find("cluster_barrier()");
  REQUIRE(first != std::string::npos);
  size_t second = nest.find("cluster_barrier()", first + 1);
  REQUIRE(second != std::string::npos);
  CHECK(nest.find("cluster_barrier()", second + 1) == std::string::npos);
  CHECK(nest.find("for ko in") < nest.find("mbarrier_arrive(A_empty[(ko - 1) % 3], 2)"));
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  CHECK_HAS(ptx, "mapa.shared::cluster.u32");
  CHECK_HAS(ptx, "mbarrier.arrive.shared::cluster.b64");
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  // 128 x 256 tiles of two 64 x 256 MMA warpgroups with a producer
  // warpgroup that keeps 40 registers: no spills, no serialized MMAs.
  MmaTiling wide = coalesce::testing::wide_producer_tiling(kKind);
  wide.cluster_blocks = 2;
  Gemm w = coalesce::testing::bf16_scheduled(wide);
  Pipeline wide_pipeline(w.out);
  coalesce::testing::check_assembled_cleanly(wide_pipeline.assemble(parse_gpu_target("sm_90a")));
  CHECK(error_against_reference(wide_pipeline, 390, 264, 136) < 4e-3);
}

TEST_CASE("a persistent grid in clusters walks the tiles by whole clusters: every tile once, B shared") {
  // Grids smaller than the clusters of tiles (each block walks several),
  // 3 and 5 block rows (a cluster's step past the output's rows), ragged,
  // K = 1 / K = 3, and K whose rows the TMA cannot describe (cp.async);
  // the MMA warps' first thread issuing (a pipeline per tile) and producer
  // warps (one pipeline across the block's tiles).
  for (auto [blocks, persistent, producers] :
       std::vector<std::array<int, 3>>{{2, 2, 0}, {2, 4, 4}, {4, 4, 4}, {2, 6, 1}}) {
    CAPTURE(blocks);
    CAPTURE(persistent);
    CAPTURE(producers);
    MmaTiling t = cluster_tiling(blocks);
    t.persistent_blocks = persistent;
    t.producer_warps = producers;
    t.min_blocks_per_sm = 1;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    for (auto [M, N, K] :
         std::vector<std::array<int, 3>>{{130, 200, 136}, {300, 136, 1}, {190, 72, 3}, {130, 64, 131}, {130, 72, 0}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
  // The nest: cluster q's blocks take rows 2q and 2q + 1 of one step of
  // the tiles' order, the columns alike; the grid is whole clusters; the
  // producer waits for the last release of the block's whole run.
  MmaTiling t = cluster_tiling(2);
  t.persistent_blocks = 4;
  t.producer_warps = 4;
  t.min_blocks_per_sm = 1;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "for bi_persistent in gpu_block.x(0, min(ceil(ceil(M/64)/2)*(ceil(N/64)), 2)*2):");
  CHECK_HAS(nest, "for bi_tile in serial(0, ceil((ceil(ceil(M/64)/2)*(ceil(N/64)) - bi_persistent/2)/2)):");
  CHECK_HAS(nest, "let tile_index = bi_persistent/2 + bi_tile*2\n");
  CHECK_HAS(nest, "let bi = tile_index/(ceil(N/64))*2 + bi_persistent % 2\n");
  CHECK_HAS(nest, "let bj = tile_index % (ceil(N/64))\n");
  CHECK_HAS(nest, "mbarrier_wait(A_empty[0], (ceil((ceil(ceil(M/64)/2)*(ceil(N/64)) - bi_persistent/2)/2)*(ceil(K/64)) "
                  "- 1)/3*3/3 % 2)");
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  // A persistent grid is one-dimensional: its clusters lie along x.
  CHECK_HAS(ptx, ".reqnctapercluster 2, 1, 1");
  CHECK_HAS(ptx, "multicast::cluster");
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  // The 128 x 256 tiles of two MMA warpgroups and a producer warpgroup
  // keeping 40 registers, on 132 blocks in clusters of 2.
  MmaTiling wide = coalesce::testing::wide_producer_tiling(kKind);
  wide.cluster_blocks = 2;
  wide.persistent_blocks = 132;
  Gemm w = coalesce::testing::bf16_scheduled(wide);
  Pipeline wide_pipeline(w.out);
  coalesce::testing::check_assembled_cleanly(wide_pipeline.assemble(parse_gpu_target("sm_90a")));
  CHECK(error_against_reference(wide_pipeline, 390, 264, 136) < 4e-3);
  // Ping-pong consumers in clusters: each fill is consumed by one group in
  // each block, the groups of a cluster's blocks taking the same tiles'
  // turns.
  for (int blocks : {4, 132}) {
    CAPTURE(blocks);
    MmaTiling alternating = ping_pong_mma_tiling(kKind, blocks, ConsumerSchedule::PingPong);
    alternating.cluster_blocks = 2;
    Gemm p = coalesce::testing::bf16_scheduled(alternating);
    Pipeline alternating_pipeline(p.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{390, 264, 136}, {300, 136, 1}, {131, 264, 3}})
      CHECK(error_against_reference(alternating_pipeline, M, N, K) < 4e-3);
    // The kernel a launch at 4096^3 runs (sizes multiples of 16).
    if (blocks == 132 && ptxas_available()) {
      const GpuTarget target = parse_gpu_target("sm_90a");
      coalesce::testing::check_assembled_cleanly(assemble_ptx(
          alternating_pipeline.specialized_ptx(target, specializable_sizes({{"M", 4096}, {"N", 4096}, {"K", 4096}})),
          target));
    }
  }
}

TEST_CASE("gpu_cluster and multicast are refused where they cannot apply") {
  using coalesce::testing::user_error_of;
  SUBCASE("a cluster size outside 2 to 8") {
    Gemm g = make_gemm(Epilogue::None);
    CHECK_HAS(user_error_of([&] { g.out.gpu_cluster(g.i, 9); }), "a cluster has 2 to 8");
    CHECK_HAS(user_error_of([&] { g.out.gpu_cluster(g.i, 1); }), "a cluster has 2 to 8");
  }
  SUBCASE("a multicast tile that depends on the clustered loop") {
    // B multicast, but the clusters along bj, on which B's tile depends.
    Gemm h = coalesce::testing::bf16_scheduled(cluster_tiling(2));
    h.out.gpu_cluster(Var("bj"), 2);
    CHECK_HAS(user_error_of([&] { Pipeline(h.out).loop_nest(); }),
              "'B' is staged with TmaCopies::multicast, but its tile starts at bj*64 in dimension 1, which "
              "depends on 'bj', along which the blocks of a cluster lie");
  }
  SUBCASE("multicast without clusters, or beside an input without the TMA") {
    Gemm g = coalesce::testing::mma_tiled(kKind, BFloat(16), BFloat(16));
    TmaCopies copies;
    copies.stages = 3;
    TmaCopies multicast = copies;
    multicast.multicast = true;
    RVar ko("ko"), kk("kk");
    g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, {}, copies)
        .stage_in_shared(g.B, ko, {}, multicast);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }),
              "'B' is staged with TmaCopies::multicast, which shares its tiles between the blocks of a cluster, "
              "but 'out' runs no clusters; schedule gpu_cluster on it, or multicast = false");
    // Multicast without the TMA cannot be written (multicast is TmaCopies'
    // own); its nearest rule: B's multicast TMA copies beside A's cp.async
    // copies at the same loop, in clusters, are two pipelines.
    Gemm c = coalesce::testing::mma_tiled(kKind, BFloat(16), BFloat(16));
    c.out.gpu_cluster(Var("bi"), 2);
    c.acc.update().mma(c.k, ko, kk, 64).allow_reassociation().stage_in_shared(c.A, ko, {}, AsyncCopies{3, true})
        .stage_in_shared(c.B, ko, {}, multicast);
    CHECK_HAS(user_error_of([&] { Pipeline(c.out).loop_nest(); }),
              "'A' and 'B' are staged at 'ko' and share its copies and barriers, so they need the same pipeline; "
              "'A' has 3 stages of cp.async copies (AsyncCopies), 'B' has 3 stages of TMA copies (TmaCopies)");
  }
  SUBCASE("a cluster along a loop that is not a split's block loop, on a non-output, with other grid forms") {
    Gemm g = coalesce::testing::bf16_scheduled(cluster_tiling(0));
    g.out.gpu_cluster(Var("ii"), 2);
    CHECK_HAS(user_error_of([&] { Pipeline(g.out).loop_nest(); }),
              "clusters blocks along 'ii', which is not one of the output's loops mapped to GPU blocks");
    Gemm a = coalesce::testing::bf16_scheduled(cluster_tiling(0));
    a.acc.gpu_cluster(Var("bi"), 2);
    CHECK_HAS(user_error_of([&] { Pipeline(a.out).loop_nest(); }), "gpu_cluster applies to the kernels of the output");
    for (const char *other : {"split_k", "gpu_persistent_blocks(3)", "gpu_block_groups"}) {
      CAPTURE(other);
      MmaTiling t = cluster_tiling(2);
      if (std::string(other) == "split_k")
        t.split_k = 2;
      else if (std::string(other) == "gpu_persistent_blocks(3)")
        t.persistent_blocks = 3; // not whole clusters of 2
      Gemm o = coalesce::testing::bf16_scheduled(t);
      // The recipe leaves groups out beside clusters (MmaTiling::groups_blocks).
      if (std::string(other) == "gpu_block_groups")
        o.out.gpu_block_groups(2);
      CHECK_HAS(user_error_of([&] { Pipeline(o.out).loop_nest(); }), str_cat(" with ", other, ": "));
    }
  }
  SUBCASE("a target without clusters") {
    // Clusters without multicast (FFMA): legal, and the same result, but
    // sm_90a only.
    GemmTiling f;
    f.block_m = f.block_n = 64;
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, f);
    g.out.gpu_cluster(Var("bi"), 2);
    Pipeline pipeline(g.out);
    GemmData data = make_data(200, 70, 33, 3);
    CHECK(coalesce::testing::cpu_error_against_reference(pipeline, data, 200, 70, 33, Epilogue::BiasGelu, Float(32)) <
          1e-5);
    CHECK_HAS(user_error_of([&] { pipeline.ptx(parse_gpu_target("sm_80")); }),
              "runs its blocks in clusters of 2 (gpu_cluster), which this compiler targets on sm_90a only");
    CHECK_HAS(pipeline.ptx(parse_gpu_target("sm_90a")), ".reqnctapercluster 1, 2, 1");
  }
}

TEST_CASE("the verifier after lowering refuses a multicast copy whose box differs between a cluster's blocks") {
  using coalesce::testing::internal_error_of;
  auto copy_at = [](const Expr &row, int multicast) {
    Expr slot = Load::make(BFloat(16), "B_shared", {Expr(0)});
    Expr barrier = Load::make(UInt(64), "A_full", {Expr(0)});
    // Under B's describability test, which the verifier checks too.
    return IfThenElse::make(Variable::make(Int(32), "N") % 8 == 0,
                            TensorCopy::make("B", {row, Expr(0)}, {64, 64}, slot, barrier, Evaluate::make(Expr(0)),
                                             multicast));
  };
  Gemm g = coalesce::testing::bf16_scheduled(cluster_tiling(2));
  Environment env = make_environment(g.out);
  Expr bi = Variable::make(Int(32), "out.s0.bi"), bj = Variable::make(Int(32), "out.s0.bj");
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(copy_at(bi * 64, 2), env); }),
            "which depends on the clustered block loop 'bi'");
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(copy_at(bj * 64, 4), env); }),
            "is multicast to 4 blocks, but the output runs clusters of 2");
  CHECK(internal_error_of([&] { verify_tensor_copies(copy_at(bj * 64, 2), env); }) == "(no error)");
}
