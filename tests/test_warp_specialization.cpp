// Warp-specialized TMA pipelines (TmaCopies::producer, ProducerWarps): warps of
// their own, past the MMA warps in the block, issue the copies; the MMA
// warps release each slot on an empty mbarrier. The CPU runs the same
// statements one step after another, against the double reference on both
// copy paths; the nest shows the producer loop, both barriers' slots and
// parities; the kernel's block grows by the producer warps; the rules; the
// kernel through ptxas.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "scheduler/LoweredFunc.h"

#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <optional>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One warpgroup on a 64 x 64 tile, its TMA copies issued by producer warps.
MmaTiling small_tiling(int producer_warps, int stages = 3) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind, stages);
  t.producer_warps = producer_warps;
  return t;
}

// The default 128 x 128 tiling (two warpgroups), with producer warps.
MmaTiling wide_tiling(int producer_warps) {
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.tma = true;
  t.producer_warps = producer_warps;
  return t;
}

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 7);
}

// A and B on 3 TMA stages issued by one producer warp, then `change`.
std::string refused(const std::function<void(TileCopies &, TileCopies &)> &change) {
  Gemm g = coalesce::testing::mma_tiled(kKind, BFloat(16), BFloat(16));
  TmaCopies tma;
  tma.stages = 3;
  tma.producer = ProducerWarps{1};
  TileCopies a = tma, b = tma;
  change(a, b);
  RVar ko("ko"), kk("kk");
  g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, {}, a)
      .stage_in_shared(g.B, ko, {}, b);
  return coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); });
}

// The producer warps of a TMA pipeline.
std::optional<ProducerWarps> &producer(TileCopies &copies) { return std::get<TmaCopies>(copies).producer; }

} // namespace

TEST_CASE("warp-specialized TMA GEMMs + bias + GELU match the double reference, on both copy paths") {
  for (int producers : {1, 4}) {
    CAPTURE(producers);
    Gemm g = coalesce::testing::bf16_scheduled(small_tiling(producers, producers == 1 ? 3 : 4));
    Pipeline pipeline(g.out);
    // The TMA path ragged against the tile and the k step (fewer tiles than
    // slots, then more), then K not a multiple of 8: the cp.async path.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{70, 72, 8}, {130, 136, 328}, {70, 72, 131}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
}

TEST_CASE("a warp-specialized pipeline's fused epilogue runs once, after the whole reduction (K = 1 / K = 3)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(small_tiling(1), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3, 8, 24}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 70, 72, K, e) < 4e-3);
    }
  }
}

TEST_CASE("producer warps compose with split-K, block groups and tiny shapes") {
  struct Case {
    const char *what;
    int split_k;
    SplitKMode mode;
    int block_group_rows;
    Epilogue epilogue;
  };
  for (const Case &c : {Case{"split-K, deterministic", 3, SplitKMode::Deterministic, 0, Epilogue::BiasGelu},
                        Case{"split-K, atomic", 3, SplitKMode::Atomic, 0, Epilogue::BiasRelu},
                        Case{"block groups", 1, SplitKMode::Deterministic, 2, Epilogue::BiasGelu},
                        Case{"no epilogue", 1, SplitKMode::Deterministic, 0, Epilogue::None}}) {
    CAPTURE(c.what);
    MmaTiling t = small_tiling(2);
    t.split_k = c.split_k;
    t.split_k_mode = c.mode;
    t.block_group_rows = c.block_group_rows;
    Gemm g = coalesce::testing::bf16_scheduled(t, c.epilogue);
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{70, 72, 520}, {1, 8, 8}, {3, 1, 1}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K, c.epilogue) < 4e-3);
    }
  }
}

TEST_CASE("the nest shows the producer warps, the empty barriers and their slots and parities") {
  Gemm g = coalesce::testing::bf16_scheduled(wide_tiling(1));
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "allocate A_empty[3] u64 in shared");
  // One arrival per MMA warp (two warpgroups) completes a phase.
  CHECK_HAS(nest, "mbarrier_init(A_empty[0], 8)");
  CHECK_HAS(nest, "mbarrier_init(A_full[0], 1)");
  // The producer warp lies past the eight MMA warps.
  CHECK_HAS(nest, "for warp in gpu_thread.y(8, 1):  # producer warps");
  CHECK_HAS(nest, "if warp == 8 && lane == 0:");
  // Step ko releases the slot step ko - 1 read, one arrival per warp.
  CHECK_HAS(nest, "if (lane + warp*32) % 32 == 0:");
  CHECK_HAS(nest, "mbarrier_arrive(A_empty[(ko - 1) % 3])");
  // The producer refills slot ko % 3 with tile ko + 3 once step ko's
  // release completes phase ko / 3.
  CHECK_HAS(nest, "mbarrier_wait(A_empty[ko % 3], ko/3 % 2)");
  CHECK_HAS(nest, "mbarrier_expect_tx(A_full[ko % 3], 32768)");
  CHECK_HAS(nest, "tensor_copy A[bi*128, ko*64 + 192] box 128x64");
  CHECK_HAS(nest, "mbarrier_wait(A_full[ko % 3], ko/3 % 2)");
  CHECK_HAS(nest, "mbarrier_inval(A_empty[2])");
  // No block-wide barrier between the steps.
  size_t loop = nest.find("for ko in serial");
  REQUIRE(loop != std::string::npos);
  size_t after = nest.find("wgmma_wait(0)", loop);
  REQUIRE(after != std::string::npos);
  CHECK(nest.substr(loop, after - loop).find("barrier\n") == std::string::npos);

  // The kernel's block: eight MMA warps and the producer warp.
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() == 1);
  CHECK(program.kernels[0].block == std::array<int, 3>{32, 9, 1});
}

TEST_CASE("a producer warpgroup makes the block four warps larger") {
  // One block per SM: at two, 384 threads would leave each 80 registers,
  // too few for 64 accumulators and the rest (check_gpu_limits).
  MmaTiling t = wide_tiling(4);
  t.min_blocks_per_sm = 1;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  CHECK_HAS(pipeline.loop_nest(), "for warp in gpu_thread.y(8, 4):  # producer warps");
  CHECK(pipeline.gpu_program().kernels[0].block == std::array<int, 3>{32, 12, 1});
}

TEST_CASE("a schedule that asks for producer warps the pipeline cannot have is rejected with the rule") {
  // Producer warps are the TMA pipeline's own (once "producer warps issue
  // TMA copies only"): beside an input on cp.async copies at the same loop,
  // two pipelines.
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { b = AsyncCopies{3, true}; }),
            "'A' and 'B' are staged at 'ko' and share its copies and barriers, so they need the same pipeline; "
            "'A' has 3 stages of TMA copies (TmaCopies), issued by 1 producer warps, 'B' has 3 stages of cp.async "
            "copies (AsyncCopies)");
  for (int warps : {5, -1, 0}) {
    CAPTURE(warps);
    CHECK_HAS(refused([&](TileCopies &, TileCopies &b) { producer(b) = ProducerWarps{warps}; }),
              str_cat("'B' is staged with ProducerWarps{", warps, "}; producer warps are 1 to 4 (or none: the MMA "
                      "warps' first thread issues the copies)"));
  }
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { producer(b) = ProducerWarps{2}; }),
            "'A' and 'B' are staged at 'ko' and share its copies and barriers, so they need the same pipeline; "
            "'A' has 3 stages of TMA copies (TmaCopies), issued by 1 producer warps, 'B' has 3 stages of TMA "
            "copies (TmaCopies), issued by 2 producer warps");
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { producer(b).reset(); }),
            "'A' has 3 stages of TMA copies (TmaCopies), issued by 1 producer warps, 'B' has 3 stages of TMA "
            "copies (TmaCopies)");
  SUBCASE("a name the empty barriers take") {
    Gemm g = make_gemm(Epilogue::None, BFloat(16), BFloat(16));
    Func clash("B_empty");
    clash(g.i, g.j) = g.out(g.i, g.j);
    CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(clash).loop_nest(); }), "B_empty");
  }
}

TEST_CASE("the warp-specialized kernel assembles for sm_90a with no MMA serialized and no wait injected") {
  for (int producers : {1, 4}) {
    CAPTURE(producers);
    // One block per SM: 288 or 384 threads keep 168 registers each.
    MmaTiling t = wide_tiling(producers);
    t.stages = 4;
    t.min_blocks_per_sm = 1;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
    CHECK_HAS(ptx, "mbarrier.arrive.shared::cta.b64");
    // The cp.async pipeline's barriers count only the MMA warps' threads.
    CHECK_HAS(ptx, "bar.sync \t1, 256;");
    CHECK_HAS(ptx, str_cat(".maxntid 32, ", 8 + producers, ", 1"));
    if (!ptxas_available()) {
      MESSAGE("ptxas not found: skipping the assembly");
      return;
    }
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
}

TEST_CASE("a producer warpgroup at two blocks per SM leaves too few registers for the accumulators: refused") {
  std::string message = coalesce::testing::user_error_of([&] {
    Gemm g = coalesce::testing::bf16_scheduled(wide_tiling(4));
    Pipeline(g.out).loop_nest();
  });
  CHECK_HAS(message, "in schedule for 'acc': its warpgroup MMAs keep 64 f32 accumulators per thread in registers");
  CHECK_HAS(message, "a block of 384 threads (producer warps included) at 2 blocks per SM (gpu_min_blocks_per_sm) "
                     "gives each thread 80");
}

TEST_CASE("producer warps count toward the 1,024 threads of a block") {
  // 128 x 256 of 64 x 64 warpgroup tiles: 32 MMA warps, 1,024 threads;
  // one producer warp more would make 1,056 (ptxas refused it only with an
  // unrelated "insufficient registers").
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind);
  t.block_m = 128;
  t.block_n = 256;
  t.min_blocks_per_sm = 1;
  Gemm full = coalesce::testing::bf16_scheduled(t);
  CHECK(Pipeline(full.out).gpu_program().kernels[0].block == std::array<int, 3>{32, 32, 1});
  t.producer_warps = 1;
  Gemm over = coalesce::testing::bf16_scheduled(t);
  std::string message = coalesce::testing::user_error_of([&] { Pipeline(over.out).loop_nest(); });
  CHECK_HAS(message, "make 1056 threads per block, 32 of them producer warps (ProducerWarps), more "
                     "than the limit of 1024");
  CHECK_HAS(message, "use fewer producer warps, or fewer MMA warps");
  // Nothing reaches the CPU or the PTX either.
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(over.out).ptx(); }), "make 1056 threads per block");
}

TEST_CASE("shared memory over the limit with producer warps names the Func and the k loop, not the barriers") {
  // 128 x 256 tiles in 5 stages: 240 KiB of tiles, over sm_90a's 227 KiB.
  MmaTiling t = default_mma_tiling(kKind, 4096, 4096, GpuTarget().sm_count());
  t.tma = true;
  t.stages = 5;
  t.producer_warps = 1;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  std::string message = coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); });
  CHECK_HAS(message, "in schedule for 'acc': the kernel's shared memory");
  CHECK_HAS(message, "staged at loop 'ko'");
  CHECK(message.find("A_full") == std::string::npos);
}

TEST_CASE("a warpgroup tile whose accumulators the launch's registers cannot hold is refused before ptxas") {
  // tf32, one 64 x 256 warpgroup (128 f32 accumulators per thread), a
  // producer warpgroup, 5 stages, two blocks per SM: 512 threads per SM
  // leave 128 registers each. ptxas refused it: "(C7602) Insufficient
  // registers (128) ... Try to compile with register target of 154".
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(MmaKind::TF32_wgmma_m64k8, 5);
  t.block_n = t.warp_n = 256;
  t.producer_warps = 4;
  t.min_blocks_per_sm = 2;
  t.tma_padded_copies = PaddedCopies::Both;
  Gemm g = coalesce::testing::mma_scheduled(t, Epilogue::BiasGelu, Float(32), Float(32));
  std::string message = coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); });
  CHECK_HAS(message, "in schedule for 'acc': its warpgroup MMAs keep 128 f32 accumulators per thread in registers");
  CHECK_HAS(message, "make 160, but a block of 256 threads (producer warps included) at 2 blocks per SM "
                     "(gpu_min_blocks_per_sm) gives each thread 128");
  // One block per SM gives 248: accepted.
  t.min_blocks_per_sm = 1;
  Gemm one = coalesce::testing::mma_scheduled(t, Epilogue::BiasGelu, Float(32), Float(32));
  CHECK_NOTHROW(Pipeline(one.out).loop_nest());
}

TEST_CASE("register reallocation does not lift the launch's registers, which ptxas compiles the whole kernel within") {
  // 128 x 128 tiles of two 64 x 128 warpgroups and a producer warpgroup
  // keeping 40 registers, two blocks per SM: the launch gives 80, the MMA
  // warps would get 96 once they run; ptxas refused the kernel
  // ("(C7602) Insufficient registers (80)"), for bf16 and tf32 alike.
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.tma = true;
  t.producer_warps = 4;
  t.producer_registers = 40;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  std::string message = coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); });
  CHECK_HAS(message, "its warpgroup MMAs keep 64 f32 accumulators per thread in registers");
  CHECK_HAS(message, "at 2 blocks per SM (gpu_min_blocks_per_sm) gives each thread 80");
  CHECK_HAS(message, "which ptxas compiles the whole kernel within, though register reallocation gives the MMA "
                     "warps 96 once it runs");
  // At one block per SM the launch gives 168: accepted, and ptxas agrees.
  t.min_blocks_per_sm = 1;
  Gemm one = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(one.out);
  CHECK_NOTHROW(pipeline.loop_nest());
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}
