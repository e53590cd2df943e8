// Warpgroup MMA pipelines fed by the tensor memory accelerator
// (TmaCopies): the CPU runs the same statements the GPU runs (each
// TMA copy as its element-wise definition), against the double reference at
// shapes the TMA describes (rows of whole 16-byte multiples) and shapes it
// does not (the cp.async copies then run); the pipeline's slots and
// parities in the nest; the rules; the kernel through ptxas; the tensor maps
// the kernel takes.

#include "examples/Reference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/TensorMaps.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <tuple>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// The PTX lines that move the shared tiles' base address into a register.
std::vector<std::string> shared_base_moves(const std::string &ptx) {
  std::vector<std::string> moves;
  std::istringstream lines(ptx);
  for (std::string line; std::getline(lines, line);)
    if (line.find("mov.") != std::string::npos && line.find("_shared;") != std::string::npos)
      moves.push_back(line);
  return moves;
}

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One warpgroup on a 64 x 64 tile, copied by the TMA.
MmaTiling small_tma_tiling(int stages = 3) { return coalesce::testing::one_tile_tma_tiling(kKind, stages); }

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 5);
}

// A and B on 3 TMA stages, then `change` to both pipelines.
std::string refused(const std::function<void(TileCopies &, TileCopies &)> &change, bool wgmma = true) {
  Gemm g = coalesce::testing::mma_tiled(wgmma ? kKind : MmaKind::BF16_m16n8k16, BFloat(16), BFloat(16),
                                        wgmma ? 64 : 32);
  TmaCopies tma;
  tma.stages = 3;
  TileCopies a = tma, b = tma;
  change(a, b);
  RVar ko("ko"), kk("kk");
  g.acc.update().mma(g.k, ko, kk, wgmma ? 64 : 32).allow_reassociation().stage_in_shared(g.A, ko, {}, a)
      .stage_in_shared(g.B, ko, {}, b);
  return coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); });
}

} // namespace

TEST_CASE("TMA-fed warpgroup MMA GEMMs + bias + GELU match the double reference, on both copy paths") {
  for (int stages : {3, 4}) {
    CAPTURE(stages);
    Gemm g = coalesce::testing::bf16_scheduled(small_tma_tiling(stages));
    Pipeline pipeline(g.out);
    // N and K multiples of 8: the TMA path, ragged against the tile and the
    // k step (M anywhere); then K or N not: the cp.async path.
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{
             {64, 64, 64}, {70, 72, 8}, {130, 136, 200}, {1, 8, 320}, {70, 72, 131}, {67, 45, 64}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
}

TEST_CASE("a TMA pipeline's fused epilogue runs once, after the whole reduction (K = 1 / K = 3, K = 8 / K = 24)") {
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    Gemm g = coalesce::testing::bf16_scheduled(small_tma_tiling(), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3, 8, 24}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 70, 72, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the loop nest shows the TMA copies, the barriers' slots and parities, and the cp.async fallback") {
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.tma = true;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  std::string nest = Pipeline(g.out).loop_nest();
  CHECK_HAS(nest, "allocate A_full[3] u64 in shared");
  CHECK_HAS(nest, "if K % 8 == 0 && N % 8 == 0:");
  CHECK_HAS(nest, "mbarrier_init(A_full[0], 1)");
  CHECK_HAS(nest, "mbarrier_init_fence()");
  // A 128 x 64 box; B's 64 x 128 tile in two 64-column boxes.
  CHECK_HAS(nest, "tensor_copy A[bi*128, 0] box 128x64 (0 outside A) -> A_shared[0, 0, 0, 0], completes on A_full[0]");
  CHECK_HAS(nest, "tensor_copy B[0, bj*128 + 64] box 64x64 (0 outside B) -> B_shared[0, 1, 0, 0]");
  CHECK_HAS(nest, "mbarrier_expect_tx(A_full[0], 32768)");
  // Tile ko in slot ko % 3, phase ko / 3; the refill two tiles ahead goes
  // to the slot the previous step read.
  CHECK_HAS(nest, "mbarrier_wait(A_full[ko % 3], ko/3 % 2)");
  CHECK_HAS(nest, "mbarrier_expect_tx(A_full[(ko + 2) % 3], 32768)");
  CHECK_HAS(nest, "mbarrier_inval(A_full[2])");
  // The other branch: every thread's copies.
  CHECK_HAS(nest, "async_load_vector(");
}

TEST_CASE("a schedule that asks the TMA for what it cannot do is rejected with the rule") {
  CHECK_HAS(refused([](TileCopies &, TileCopies &) {}, /*wgmma=*/false),
            "'A' is staged with TmaCopies, but the TMA copies only the 128-byte swizzled tiles that warpgroup MMAs "
            "read (mma() with a wgmma kind); use AsyncCopies for this stage");
  // The stage counts of each pipeline (checked before the pipelines are
  // compared).
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { std::get<TmaCopies>(b).stages = 2; }),
            "'B' is staged with TmaCopies of 2 stages; a TMA pipeline has 3 to 8");
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { std::get<TmaCopies>(b).stages = 9; }),
            "'B' is staged with TmaCopies of 9 stages; a TMA pipeline has 3 to 8");
  for (int stages : {1, 9}) {
    CAPTURE(stages);
    CHECK_HAS(refused([&](TileCopies &a, TileCopies &b) { a = b = AsyncCopies{stages, true}; }),
              str_cat("'A' is staged with AsyncCopies of ", stages,
                      " stages; a pipeline of asynchronous copies has 2 to 8"));
  }
  // A on the TMA, B on one buffer, on cp.async copies or on another stage
  // count: the inputs staged at ko share its copies and barriers (the rules
  // that once asked for the TMA on both or neither, and for its stages).
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { b = OneBuffer{true}; }),
            "'A' and 'B' are staged at 'ko' and share its copies and barriers, so they need the same pipeline; "
            "'A' has 3 stages of TMA copies (TmaCopies), 'B' has one buffer (OneBuffer)");
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { b = AsyncCopies{3, true}; }),
            "'A' and 'B' are staged at 'ko' and share its copies and barriers, so they need the same pipeline; "
            "'A' has 3 stages of TMA copies (TmaCopies), 'B' has 3 stages of cp.async copies (AsyncCopies)");
  CHECK_HAS(refused([](TileCopies &, TileCopies &b) { std::get<TmaCopies>(b).stages = 4; }),
            "'A' has 3 stages of TMA copies (TmaCopies), 'B' has 4 stages of TMA copies (TmaCopies)");
  // The TMA always writes 0 outside the input (once "set zero_fill too"):
  // its tiles satisfy the ragged-K rule that the same pipeline's cp.async
  // copies without zero_fill break.
  CHECK_HAS(refused([](TileCopies &a, TileCopies &b) { a = b = AsyncCopies{3, false}; }),
            "stage 'A' in shared memory with zero_fill copies (or the TMA's), so they read as 0");
  {
    Gemm g = coalesce::testing::mma_tiled(kKind, BFloat(16), BFloat(16), 64);
    RVar ko("ko"), kk("kk");
    TmaCopies tma;
    tma.stages = 3;
    g.acc.update().mma(g.k, ko, kk, 64).allow_reassociation().stage_in_shared(g.A, ko, {}, tma)
        .stage_in_shared(g.B, ko, {}, tma);
    CHECK_HAS(Pipeline(g.out).loop_nest(), "tensor_copy A[");
  }
  SUBCASE("a name the barriers take") {
    Gemm g = make_gemm(Epilogue::None, BFloat(16), BFloat(16));
    Func clash("A_full");
    clash(g.i, g.j) = g.out(g.i, g.j);
    CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(clash).loop_nest(); }), "A_full");
  }
  SUBCASE("a target without the TMA") {
    Gemm g = coalesce::testing::bf16_scheduled(small_tma_tiling());
    Pipeline pipeline(g.out);
    CHECK_HAS(coalesce::testing::user_error_of([&] { pipeline.ptx(parse_gpu_target("sm_80")); }), "sm_90a");
  }
}

TEST_CASE("the kernel takes one tensor map per input and box, by value, as a grid constant") {
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.tma = true;
  // Direct stores: with the tile through shared memory this 128-register
  // tiling spills 8 bytes (docs/performance.md, the epilogue compiled once).
  t.tile_stores = TileStores::Direct;
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() == 1);
  const std::vector<TensorMapParam> &maps = program.kernels[0].tensor_maps;
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].input == "A");
  CHECK(maps[0].box == std::vector<int>{128, 64});
  CHECK(maps[1].input == "B");
  CHECK(maps[1].box == std::vector<int>{64, 64});
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  CHECK_HAS(ptx, ".param .align 64 .b8 coalesce_out_param_7[128]");
  CHECK_HAS(ptx, "cvta.param.u64");
  CHECK_HAS(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
  CHECK_HAS(ptx, "mbarrier.try_wait.parity.shared::cta.b64");
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("on Hopper the pipeline addresses shared memory in 32 bits: slots, parities and descriptors") {
  // With 64-bit shared pointers every slot, parity and descriptor of the k
  // loop was computed in 64-bit arithmetic (a 64-bit multiply-high per
  // division by the three stages); on the H200 the 32-bit form is 10%
  // faster. sm_80 keeps 64-bit pointers (codegen/NvptxTarget.cpp says why).
  MmaTiling t = coalesce::testing::two_warpgroup_tiling(kKind);
  t.tma = true;
  REQUIRE(t.stages == 3);
  Gemm g = coalesce::testing::bf16_scheduled(t);
  Pipeline pipeline(g.out);
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  // The tiles' base address goes into a 32-bit register, never a 64-bit one.
  std::vector<std::string> moves = shared_base_moves(ptx);
  CHECK_FALSE(moves.empty());
  for (const std::string &line : moves) {
    INFO(line);
    CHECK(line.find("mov.b32") != std::string::npos);
  }
  CHECK(ptx.find("mul.hi.u64") == std::string::npos);
  CHECK_HAS(ptx, "mul.hi.u32");
}

TEST_CASE("on Hopper a program without warpgroup MMAs or TMA copies keeps 64-bit shared addresses") {
  // The width is chosen per program: the FFMA kernel at 64 x 64 tiles
  // (1024^3's default) was 15% slower on the H200 with 32-bit addresses.
  GemmTiling tiling = default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count());
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
  Pipeline pipeline(g.out);
  std::vector<std::string> moves = shared_base_moves(pipeline.ptx(parse_gpu_target("sm_90a")));
  CHECK_FALSE(moves.empty());
  for (const std::string &line : moves) {
    INFO(line);
    CHECK(line.find("mov.b32") == std::string::npos);
  }
}

TEST_CASE("a tensor map is left zeroed where the TMA cannot describe the input, and refuses unaligned data") {
  TensorMapParam param{"A", {64, 64}};
  auto all_zero = [](const CUtensorMap &map) {
    CUtensorMap zero;
    std::memset(&zero, 0, sizeof zero);
    return std::memcmp(&map, &zero, sizeof map) == 0;
  };
  // Rows of 4097 bf16 (8194 bytes) and empty inputs: the kernel takes the
  // cp.async copies and never reads the map, so no driver is needed.
  CHECK(all_zero(encode_tensor_map(param, BFloat(16), {64, 4097}, 0x10000)));
  CHECK(all_zero(encode_tensor_map(param, BFloat(16), {0, 64}, 0x10000)));
  CHECK_FALSE(tma_can_describe(BFloat(16), {64, 4097}, 0x10000));
  CHECK_FALSE(tma_can_describe(BFloat(16), {64, 4096}, 0x10008));
  CHECK(tma_can_describe(BFloat(16), {64, 4096}, 0x10000));
  CHECK_HAS(coalesce::testing::user_error_of([&] { encode_tensor_map(param, BFloat(16), {64, 4096}, 0x10008); }),
            "input 'A' starts at a device address that is not a multiple of 16 bytes");
}

namespace {

// A bf16 GEMM + bias + GELU whose reduction starts at column `start`
// (RDom(start, K - start)), on the default warpgroup tiling with the TMA,
// optionally split across blocks.
Pipeline offset_reduction(int start, int split_k = 1, bool tma = true) {
  Param M("M"), N("N"), K("K");
  Input A("A", BFloat(16), {M, K}), B("B", BFloat(16), {K, N}), bias("bias", Float(32), {N});
  Var i("i"), j("j");
  RDom k(start, K - start, "k");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = cast(BFloat(16), gelu(acc(i, j) + bias(j)));
  MmaTiling t = small_tma_tiling();
  t.tma = tma;
  t.split_k = split_k;
  schedule_gemm_mma(out, acc, A, B, i, j, k, t);
  return Pipeline(out);
}

} // namespace

TEST_CASE("the TMA's boxes start their rows at 16-byte multiples: a reduction from column 2 is refused, from 8 runs") {
  // On the H200 the TMA copy of a bf16 tile from column 2 + 64 ko ended in
  // CUDA_ERROR_ILLEGAL_INSTRUCTION (the context lost); from column 8 it ran
  // and matched the reference.
  for (int split : {1, 2}) {
    CAPTURE(split);
    std::string message = coalesce::testing::user_error_of([&] { offset_reduction(2, split).loop_nest(); });
    CHECK_HAS(message, "in schedule for 'acc' (update 0): 'A' is staged with TmaCopies, whose copies must "
                       "start each row at a multiple of 16 bytes (8 bf16 elements)");
    CHECK_HAS(message, "the tile staged at 'ko' starts at ko*64");
    CHECK_HAS(message, "+ 2");
    CHECK_HAS(message, "or stage it with AsyncCopies");
  }
  for (int start : {1, 3, 4, 6})
    CHECK_HAS(coalesce::testing::user_error_of([&] { offset_reduction(start).loop_nest(); }),
              "must start each row at a multiple of 16 bytes");
  // Starts at 16-byte multiples are accepted, and so is any start on the
  // cp.async copies; all match the reference at ragged shapes.
  for (auto [start, split, tma] : std::vector<std::tuple<int, int, bool>>{{8, 1, true}, {64, 1, true}, {8, 2, true},
                                                                        {2, 1, false}}) {
    CAPTURE(start);
    CAPTURE(split);
    CAPTURE(tma);
    Pipeline pipeline = offset_reduction(start, split, tma);
    const int M = 70, N = 72, K = 136;
    GemmData data = make_data(M, N, K, 13, BFloat(16));
    Buffer out({M, N}, BFloat(16));
    pipeline.realize_on_cpu({{"A", data.a}, {"B", data.b}, {"bias", data.bias}, {"M", M}, {"N", N}, {"K", K}}, out);
    double worst = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double sum = 0;
        for (int k = start; k < K; ++k)
          sum += double(data.a.at(i, k)) * data.b.at(k, j);
        double expected = reference_epilogue<double>(Epilogue::BiasGelu, sum, data.bias.get(size_t(j)));
        worst = std::max(worst, std::abs(out.get(size_t(i) * N + j) - expected) / (1 + std::abs(expected)));
      }
    CHECK(worst < 1e-2);
  }
}
