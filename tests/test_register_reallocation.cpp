// Register reallocation (ProducerWarps::registers): a producer
// warpgroup gives its registers back (setmaxnreg.dec), issues the TMA
// copies and leaves the kernel; the MMA warpgroups take what it freed
// (setmaxnreg.inc). The CPU runs the same statements (the reallocation and
// the exit are no-ops there) against the double reference, the K = 1 / K =
// 3 pair included; the nest shows the counts, the exit, and barriers that
// count only the MMA warps; ptxas honours it (no C7507 / C7508, the
// launch's registers as computed); the rules; the verifier after the split.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "TextCount.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "scheduler/ReallocateRegisters.h"
#include "scheduler/SplitWarpRoles.h"

#include <doctest/doctest.h>

#include <array>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One 64 x 64 MMA warpgroup, a producer warpgroup keeping `registers`.
MmaTiling small_tiling(int registers = 40, int stages = 3) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind, stages);
  t.producer_warps = 4;
  t.producer_registers = registers;
  t.min_blocks_per_sm = 2;
  return t;
}

// 128 x 256 tiles of two 64 x 256 MMA warpgroups, 4 stages, one block per
// SM: 384 threads, 168 registers each at launch.
MmaTiling wide_tiling(int registers = 40) { return coalesce::testing::wide_producer_tiling(kKind, registers); }

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 9);
}

// A 256 x 512 GEMM + bias + GELU, M and N fixed to whole 128 x 256 tiles,
// K fixed or (undefined) known at run time, scheduled with `t`.
constexpr int kWholeM = 256, kWholeN = 512;
Gemm whole_tiles(const MmaTiling &t, Expr K) {
  Gemm g = make_gemm_with_extents(Epilogue::BiasGelu, BFloat(16), BFloat(16), kWholeM, kWholeN, K);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

// The CPU runs the statements the GPU would: against the double
// reference at K = 192 and the K = 1 / K = 3 pair.
void check_whole_tiles_on_cpu(Pipeline &pipeline, uint32_t seed) {
  for (int k : {192, 1, 3}) {
    CAPTURE(k);
    GemmData data = make_data(kWholeM, kWholeN, k, seed, BFloat(16));
    Buffer out({kWholeM, kWholeN}, BFloat(16));
    out.poison();
    pipeline.realize_on_cpu({{"A", data.a}, {"B", data.b}, {"bias", data.bias}, {"K", k}}, out);
    Buffer wide({kWholeM, kWholeN});
    for (int i = 0; i < kWholeM; ++i)
      for (int j = 0; j < kWholeN; ++j)
        wide(i, j) = out.at(i, j);
    CHECK(relative_error(wide, reference(data, kWholeM, kWholeN, k, Epilogue::BiasGelu)) < 4e-3);
  }
}

// One barrier of the whole block (the barriers' initialization, before the
// producers' program), the staged tile's counting the 256 MMA threads, and
// ptxas honouring the reallocation: 168 registers at launch, no spills, no
// C7507.
void check_staged_tile_assembles(Pipeline &pipeline) {
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  CHECK(coalesce::testing::occurrences(ptx, "bar.sync \t0;") == 1);
  CHECK(coalesce::testing::occurrences(ptx, "bar.sync \t1, 256;") >= 2);
  CHECK_HAS(ptx, "exit;");
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
  coalesce::testing::check_assembled_cleanly(assembled);
  CHECK(assembled.kernels.front().registers == launch_registers(384, 1));
}
} // namespace

TEST_CASE("the MMA warps' registers are what the launch gives less what the producers keep") {
  CHECK(launch_registers(384, 1) == 168); // 65536 / 384 = 170, down to a multiple of 8
  CHECK(launch_registers(256, 2) == 128);
  CHECK(launch_registers(128, 1) == 248); // at most 248
  CHECK(mma_warp_registers(168, 384, 128, 40) == 232);
  CHECK(mma_warp_registers(128, 256, 128, 40) == 216);
  CHECK(mma_warp_registers(248, 256, 128, 24) == 240); // at most 240
}

TEST_CASE("GEMMs + bias + GELU with register reallocation match the double reference, ragged shapes included") {
  for (int stages : {3, 4}) {
    CAPTURE(stages);
    Gemm g = coalesce::testing::bf16_scheduled(small_tiling(40, stages));
    Pipeline pipeline(g.out);
    // Rows the TMA describes and rows it does not (the cp.async copies,
    // which the producer warpgroup leaves at once), partial last k steps.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{
             {70, 72, 131}, {64, 64, 64}, {1, 8, 1}, {130, 136, 200}, {67, 45, 64}, {65, 70, 8}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
  Gemm wide = coalesce::testing::bf16_scheduled(wide_tiling());
  Pipeline pipeline(wide.out);
  CHECK(error_against_reference(pipeline, 130, 264, 136) < 4e-3);
}

TEST_CASE("with register reallocation the fused epilogue still runs once, after the whole reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(small_tiling(), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3, 9}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 70, 72, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the nest shows the reallocation, the producers' exit, and barriers of the MMA warps alone") {
  Gemm g = coalesce::testing::bf16_scheduled(wide_tiling());
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "registers_decrease(40)");
  CHECK_HAS(nest, "registers_increase(232)");
  CHECK_HAS(nest, "thread_exit()");
  CHECK_HAS(nest, "barrier (the first 256 threads)");
  // One pipeline over every k step, the partial last one included (no
  // second pipeline the exited producers could not serve).
  CHECK_HAS(nest, "for ko in serial(1, ceil(K/64) - 1):");
  CHECK(nest.find("for ko in serial(K/64") == std::string::npos);
}

TEST_CASE("ptxas honours the reallocation: 168 registers at launch, 232 for the MMA warps, no spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  Gemm g = coalesce::testing::bf16_scheduled(wide_tiling());
  Pipeline pipeline(g.out);
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  CHECK_HAS(ptx, "setmaxnreg.dec.sync.aligned.u32 \t40;");
  CHECK_HAS(ptx, "setmaxnreg.inc.sync.aligned.u32 \t232;");
  CHECK_HAS(ptx, "exit;");
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
  coalesce::testing::check_assembled_cleanly(assembled);
  // The pool the MMA warps draw from is the launch's registers: ptxas
  // must allocate what launch_registers assumed, or setmaxnreg.inc would
  // wait forever.
  CHECK(assembled.kernels.front().registers == launch_registers(384, 1));
}

TEST_CASE("register reallocation is refused where it cannot work") {
  auto refused = [](const MmaTiling &t) {
    return coalesce::testing::user_error_of([&] {
      Gemm g = coalesce::testing::bf16_scheduled(t);
      Pipeline(g.out).loop_nest();
    });
  };
  for (int registers : {20, 44, 264}) {
    CAPTURE(registers);
    CHECK_HAS(refused(small_tiling(registers)),
              str_cat("in schedule for 'acc' (update 0): 'A' is staged with ProducerWarps with ", registers,
                      " registers; registers per thread after reallocation are a multiple of 8 from 24 to 256 "
                      "(setmaxnreg), or 0 for none"));
  }
  for (int warps : {1, 2}) {
    CAPTURE(warps);
    MmaTiling fewer = small_tiling();
    fewer.producer_warps = warps;
    CHECK_HAS(refused(fewer), str_cat("'A' is staged with ProducerWarps of ", warps, " warps keeping 40 registers; "
                                      "registers are reallocated per warpgroup (setmaxnreg), so it takes 4 warps"));
  }
  MmaTiling unknown = small_tiling();
  unknown.min_blocks_per_sm = 0;
  CHECK_HAS(refused(unknown), "set gpu_min_blocks_per_sm on 'out'");
  CHECK_HAS(refused(small_tiling(128)), "ask for fewer than 128 producer registers");
  MmaTiling split = small_tiling();
  split.split_k = 2;
  CHECK_HAS(refused(split), "reallocate no registers with split_k");
  // Every refusal names the Func and its update, as the other rules do.
  // (On a persistent grid the pipeline runs across the tiles and the
  // producers leave after the last: test_pipeline_across_tiles.)
  for (const MmaTiling &t : {unknown, small_tiling(128), split})
    CHECK_HAS(refused(t), "in schedule for 'acc' (update 0): the TMA copies staged at 'ko' reallocate registers");
}

TEST_CASE("reallocation that could give the MMA warps nothing is refused for that reason, not the producers' count") {
  // One MMA warpgroup and a producer warpgroup at one block per SM: 256
  // threads, 248 registers each at launch, more than the MMA warps' cap.
  MmaTiling one_block = small_tiling(40);
  one_block.min_blocks_per_sm = 1;
  std::string message = coalesce::testing::user_error_of([&] {
    Gemm g = coalesce::testing::bf16_scheduled(one_block);
    Pipeline(g.out).loop_nest();
  });
  CHECK_HAS(message, "in schedule for 'acc' (update 0)");
  CHECK_HAS(message, "already gives every thread 248 registers, and the MMA warps take at most 240");
  CHECK_HAS(message, "use producer_registers = 0, or more blocks per SM");
  CHECK(message.find("ask for fewer than") == std::string::npos);
  // Two blocks per SM give 128 at launch: the same split reallocates.
  Gemm g = coalesce::testing::bf16_scheduled(small_tiling(40));
  CHECK_HAS(Pipeline(g.out).loop_nest(), "registers_increase(216)");
}

TEST_CASE("after the producers left, the split counts later barriers for the others; a loop's next one it refuses") {
  auto split_error = [](const Stmt &s) {
    return coalesce::testing::internal_error_of([&] { split_warp_roles(s, 1, 4, 128); });
  };
  Stmt exit = Evaluate::make(Call::make_intrinsic(Intrinsic::ThreadExit, Int(32), {}));
  // A barrier of the whole block after the exit: the others', counted for
  // them (whichever pass placed it).
  std::string split = to_string(split_warp_roles(Block::make({exit, Barrier::make()}), 1, 4, 128));
  CHECK_HAS(split, "barrier (the first 128 threads)");
  CHECK(split.find("barrier\n") == std::string::npos);
  CHECK(split_error(Block::make({exit, Barrier::make(128)})) == "(no error)");
  // Before the exit the producers are there: the barrier stays the block's.
  CHECK_HAS(to_string(split_warp_roles(Block::make({Barrier::make(), exit}), 1, 4, 128)), "barrier\n");
  // In a loop, the next iteration's barrier comes after this one's exit.
  CHECK_HAS(split_error(For::make("tile", 0, 4, ForKind::Serial, Block::make({Barrier::make(), exit}))),
            "its next iteration would wait at for them forever");
}

TEST_CASE("producers that leave before a staged output tile of whole tiles: the tile's barriers count the MMA warps") {
  // 128 x 256 tiles of two MMA warpgroups, three stages beside the output's
  // tile, M and N fixed to whole tiles: no full-tile partition guards the
  // tile's barriers, which come after the producers' exit.
  MmaTiling t = wide_tiling();
  t.stages = 3;
  t.tile_stores = TileStores::ThroughShared;
  Gemm at_run_time = whole_tiles(t, Expr());
  Pipeline pipeline(at_run_time.out);
  check_whole_tiles_on_cpu(pipeline, 5);
  // With K fixed too (a multiple of 8), no guard chooses between the TMA and
  // its fallback either: the producers leave outside any guard
  // (coalesce-gpu-check --sections=mma runs this form on the GPU).
  Gemm fixed = whole_tiles(t, Expr(192));
  Pipeline(at_run_time.out).ptx(parse_gpu_target("sm_90a"));
  Pipeline allowed(fixed.out);
  check_staged_tile_assembles(allowed);
}

TEST_CASE("a persistent grid with a staged output tile: one loop per role, and ptxas honours the reallocation") {
  // The producers walk the block's tiles in a loop of their own; the MMA
  // warps' loop holds the staged tile between barriers of their own. (One
  // loop for both, ptxas ignored setmaxnreg: C7507.) Three blocks walk four
  // tiles, so the pipeline runs across tiles.
  MmaTiling t = wide_tiling();
  t.stages = 3;
  t.tile_stores = TileStores::ThroughShared;
  t.persistent_blocks = 3;
  Gemm at_run_time = whole_tiles(t, Expr());
  Pipeline pipeline(at_run_time.out);
  check_whole_tiles_on_cpu(pipeline, 6);
  // At sizes known at run time and fixed ones (no guard around the tile).
  check_staged_tile_assembles(pipeline);
  Gemm fixed = whole_tiles(t, Expr(192));
  Pipeline fixed_pipeline(fixed.out);
  check_staged_tile_assembles(fixed_pipeline);
}
