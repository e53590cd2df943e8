// A TMA pipeline with producer warps on a persistent grid runs across the
// block's tiles: its barriers are initialized once per block, its slots and
// phases count over (tile, k step), and the producer fills the next tile's
// first slots while the MMA warps finish this one (StageWithTma.h,
// TmaPipelineAcrossTiles). The CPU runs the same statements against the
// double reference with fewer blocks than tiles, so that blocks walk
// several tiles, with k steps per tile fewer than the slots, as many, and
// more (a slot mismatch between a tile's copies and its reads changes the
// result there), ragged shapes, grouped blocks and the K = 1 / K = 3 pair;
// the nest shows the counter; on the GPU each role runs its own loop over
// the tiles, the producers leaving after theirs; ptxas assembles it
// cleanly.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/IRPrinter.h"
#include "scheduler/Lower.h"
#include "scheduler/ResourceBudget.h"

#include <doctest/doctest.h>

#include <array>
#include <sstream>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One 64 x 64 MMA warpgroup fed by a producer warpgroup through `stages`
// slots, on a persistent grid of `blocks`; the producers keep `registers`
// (0: no reallocation).
MmaTiling across_tiling(int blocks, int stages = 3, int registers = 0, int group_rows = 0) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind, stages);
  t.producer_warps = 4;
  t.producer_registers = registers;
  t.min_blocks_per_sm = 2;
  t.persistent_blocks = blocks;
  t.block_group_rows = group_rows;
  return t;
}

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 17);
}

size_t position(const std::string &text, const std::string &what, size_t from = 0) {
  size_t at = text.find(what, from);
  INFO("looking for: " << what);
  REQUIRE(at != std::string::npos);
  return at;
}

} // namespace

TEST_CASE("a pipeline across a persistent block's tiles matches the double reference") {
  // (blocks, stages, producer registers, grouped rows)
  for (auto [blocks, stages, registers, groups] :
       std::vector<std::array<int, 4>>{{3, 3, 0, 0}, {2, 4, 40, 0}, {1, 3, 40, 0}, {4, 3, 0, 2}}) {
    CAPTURE(blocks);
    CAPTURE(stages);
    CAPTURE(registers);
    CAPTURE(groups);
    Gemm g = coalesce::testing::bf16_scheduled(across_tiling(blocks, stages, registers, groups));
    Pipeline pipeline(g.out);
    // k steps of 64 per tile: 2 (fewer than the slots), 3, 4 (as many as
    // 3 or 4 slots), 5 (more); rows the TMA cannot describe (K = 131: the
    // cp.async copies, a pipeline per tile); ragged M and N.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{
             {200, 136, 72}, {130, 200, 192}, {192, 64, 256}, {70, 130, 320}, {130, 72, 131}, {1, 8, 8}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
}

TEST_CASE("across tiles the fused epilogue still runs once per tile, after its reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(across_tiling(2, 3, 40), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3, 8}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 200, 136, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the nest initializes the barriers once per block and counts slots over (tile, k step)") {
  Gemm g = coalesce::testing::bf16_scheduled(across_tiling(3, 3, 40));
  std::string nest = Pipeline(g.out).loop_nest();
  size_t init = position(nest, "mbarrier_init(A_full[0], 1)");
  size_t tiles = position(nest, "for bi_tile in serial(");
  size_t exit = position(nest, "thread_exit()");
  size_t inval = position(nest, "mbarrier_inval(A_full[0])");
  CHECK(init < tiles);
  CHECK(tiles < exit);
  CHECK(exit < inval);
  // Once each on the TMA path (the cp.async path has its own copy of the
  // tile loop, without barriers).
  CHECK(nest.find("mbarrier_init(A_full[0], 1)", init + 1) == std::string::npos);
  CHECK(nest.find("mbarrier_inval(A_full[0])", inval + 1) == std::string::npos);
  // The step's slot and phase come from the block's count of steps.
  CHECK_HAS(nest, "mbarrier_wait(A_full[(bi_tile*(ceil(K/64)) + ko) % 3], (bi_tile*(ceil(K/64)) + ko)/3 % 2)");
  // A tile's first fills wait for the slots the previous tile's steps
  // release, the last one after the loop.
  CHECK_HAS(nest, "if bi_tile*(ceil(K/64)) >= 3:");
  CHECK_HAS(nest, "mbarrier_wait(A_empty[bi_tile*(ceil(K/64)) % 3], (bi_tile*(ceil(K/64))/3 + 1) % 2)");
  CHECK_HAS(nest, "mbarrier_arrive(A_empty[(bi_tile*(ceil(K/64)) + ceil(K/64) - 1) % 3])");
}

TEST_CASE("on the GPU each role walks the tiles in its own program, the producers leaving after theirs") {
  Gemm g = coalesce::testing::bf16_scheduled(across_tiling(3, 3, 40));
  GpuProgram program = lower_for_gpu(g.out);
  std::ostringstream text;
  text << program.kernels.front().body;
  std::string body = text.str();
  size_t decrease = position(body, "registers_decrease(40)");
  size_t producer_tiles = position(body, "bi_tile in serial(", decrease);
  size_t exit = position(body, "thread_exit()", producer_tiles);
  size_t increase = position(body, "registers_increase(", exit);
  size_t mma_tiles = position(body, "bi_tile in serial(", increase);
  // The producers' loop issues copies only; the MMA warps' loop has the
  // MMAs and the epilogue; no barrier of the whole block in either.
  std::string producer = body.substr(producer_tiles, exit - producer_tiles);
  CHECK_HAS(producer, "tensor_copy");
  CHECK(producer.find("warpgroup_mma") == std::string::npos);
  CHECK(producer.find("barrier\n") == std::string::npos);
  std::string mma = body.substr(mma_tiles, position(body, "barrier (the first", mma_tiles) - mma_tiles);
  CHECK_HAS(mma, "warpgroup_mma");
  CHECK(mma.find("tensor_copy") == std::string::npos);
  CHECK(mma.find("barrier\n") == std::string::npos);
}

TEST_CASE("a pipeline across tiles assembles cleanly at 128 x 256 with register reallocation") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling t = coalesce::testing::wide_producer_tiling(kKind);
  t.persistent_blocks = GpuTarget().sm_count();
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
  coalesce::testing::check_assembled_cleanly(assembled);
  CHECK(assembled.kernels.front().registers == launch_registers(384, 1));
  // The whole run of CPU-checked numerics at the same tiling.
  CHECK(error_against_reference(pipeline, 260, 520, 200) < 4e-3);
}
