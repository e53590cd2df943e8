// split_k in SplitKMode::CombineKernel: the slices store their partial sums
// and a kernel of its own, over the whole output, adds them in slice order
// and runs the epilogue. On the CPU against the double reference at ragged
// shapes and K = 0, 1, 3 (the K = 1 / K = 3 pair against the epilogue per
// slice), bit for bit against the deterministic combine, on the FFMA, warp
// MMA and warpgroup MMA schedules; the two kernels of the GPU program and
// their PTX through ptxas; the workspace; the rules.

#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "codegen/PtxAssembler.h"
#include "runtime/GpuDevice.h"
#include "scheduler/EvaluateInt.h"
#include "scheduler/Lower.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;
using namespace coalesce::testing;

namespace {

// A knob of the warpgroup tiling besides the split.
enum class Variant { Plain, ProducerWarp, SwapAB, TileThroughShared };

Gemm warpgroup_gemm(int slices, SplitKMode mode, Variant variant = Variant::Plain) {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), variant == Variant::TileThroughShared ? BFloat(16) : Float(32));
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 64, 64, GpuTarget().sm_count());
  t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
  switch (variant) {
  case Variant::Plain:
    break;
  case Variant::ProducerWarp:
    t.producer_warps = 1;
    t.min_blocks_per_sm = 1;
    break;
  case Variant::SwapAB:
    swap_ab_where_rows_are_few(t, 16, 4096, 4096, GpuTarget().sm_count());
    REQUIRE(t.swap_ab);
    break;
  case Variant::TileThroughShared:
    t.tile_stores = TileStores::ThroughShared;
    break;
  }
  t.split_k = slices;
  t.split_k_mode = mode;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

} // namespace

TEST_CASE("the combine kernel matches the reference at ragged shapes, and the deterministic combine bit for bit") {
  struct Case {
    std::string what;
    Gemm kernel, last_block;
    bool tf32;
  };
  GemmTiling small_m = small_m_tiling(16);
  small_m.split_k = 7;
  Case cases[] = {
      {"FFMA, 3 slices", ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::CombineKernel)),
       ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::Deterministic)), false},
      {"FFMA, 4 slices, bias folded", ffma_gemm(Epilogue::BiasGelu, ffma_tiling(4, SplitKMode::CombineKernel), true),
       ffma_gemm(Epilogue::BiasGelu, ffma_tiling(4, SplitKMode::Deterministic), true), false},
      {"FFMA 16-row tiles, 7 slices",
       ffma_gemm(Epilogue::BiasGelu,
                 [&] {
                   GemmTiling t = small_m;
                   t.split_k_mode = SplitKMode::CombineKernel;
                   return t;
                 }()),
       ffma_gemm(Epilogue::BiasGelu, small_m), false},
      {"bf16 warp MMA, 3 slices", mma_gemm(MmaKind::BF16_m16n8k16, 3, SplitKMode::CombineKernel),
       mma_gemm(MmaKind::BF16_m16n8k16, 3, SplitKMode::Deterministic), false},
      {"tf32 warp MMA, 5 slices", mma_gemm(MmaKind::TF32_m16n8k8, 5, SplitKMode::CombineKernel),
       mma_gemm(MmaKind::TF32_m16n8k8, 5, SplitKMode::Deterministic), true},
      {"bf16 warpgroup MMA, 3 slices", warpgroup_gemm(3, SplitKMode::CombineKernel),
       warpgroup_gemm(3, SplitKMode::Deterministic), false},
      {"bf16 warpgroup MMA with a producer warp, 3 slices",
       warpgroup_gemm(3, SplitKMode::CombineKernel, Variant::ProducerWarp),
       warpgroup_gemm(3, SplitKMode::Deterministic, Variant::ProducerWarp), false},
      {"bf16 warpgroup MMA swapped (swap-AB), 4 slices", warpgroup_gemm(4, SplitKMode::CombineKernel, Variant::SwapAB),
       warpgroup_gemm(4, SplitKMode::Deterministic, Variant::SwapAB), false},
      {"bf16 warpgroup MMA, bf16 tiles through shared memory, 2 slices",
       warpgroup_gemm(2, SplitKMode::CombineKernel, Variant::TileThroughShared),
       warpgroup_gemm(2, SplitKMode::Deterministic, Variant::TileThroughShared), false},
  };
  for (Case &c : cases) {
    INFO(c.what);
    Pipeline kernel(c.kernel.out), last_block(c.last_block.out);
    Type in = c.kernel.in;
    for (Shape s : kShapes) {
      INFO(s.M, "x", s.N, "x", s.K);
      GemmData data = make_data(s.M, s.N, s.K, 13, in);
      if (c.tf32) {
        round_to_tf32(data.a);
        round_to_tf32(data.b);
      }
      Buffer out = run(kernel, data, s, c.kernel.epilogue);
      CHECK(count_nan(out) == 0);
      // A bf16 output's rounding: 2^-8 relative.
      const double tolerance = c.kernel.out_type == BFloat(16) ? 4e-3 : 1e-5;
      CHECK(relative_error(out, reference(data, s.M, s.N, s.K, c.kernel.epilogue)) < tolerance);
      CHECK(same_bits(out, run(last_block, data, s, c.kernel.epilogue)));
    }
  }
}

TEST_CASE("the combine kernel runs the epilogue once, after every slice: the K = 1 / K = 3 pair") {
  for (bool fold : {false, true}) {
    const int slices = 3;
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(slices, SplitKMode::CombineKernel), fold);
    Pipeline pipeline(g.out);
    for (int K : {1, 3}) {
      INFO((fold ? "bias folded, " : ""), "K = ", K);
      Shape s{19, 33, K};
      GemmData data = make_data(s.M, s.N, s.K, 11);
      Buffer out = run(pipeline, data, s, g.epilogue);
      CHECK(relative_error(out, unfused_chain(data, s.M, s.N, s.K, g.epilogue)) < 1e-6);
      CHECK(relative_error(out, epilogue_per_slice(data, s, slices, g.epilogue)) > 1e-2);
    }
  }
}

TEST_CASE("the combine is a second kernel over the whole output; the slices keep no counters") {
  Gemm g = warpgroup_gemm(4, SplitKMode::CombineKernel);
  Pipeline pipeline(g.out);
  const std::string nest = pipeline.loop_nest();
  CHECK(nest.find("last_arrival") == std::string::npos);
  CHECK(nest.find("for kz_block in gpu_block.x") != std::string::npos);
  CHECK(nest.find("for kz_sum in unrolled(1, 3)") != std::string::npos);
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() == 2);
  CHECK(program.kernels[0].name == "out");
  CHECK(program.kernels[1].name == "out_combine");
  CHECK(program.kernels[1].threads() == 128);
  // Its grid covers every element, 256 per block: 1,000 x 1,000 in 3,907.
  CHECK(evaluate_int(program.kernels[1].grid[0], {{"M", 1000}, {"N", 1000}, {"K", 64}}) == 3907);
  std::vector<std::string> workspaces;
  for (const Argument &arg : program.args)
    if (arg.is_workspace)
      workspaces.push_back(arg.name + " " + std::to_string(arg.extents.size()));
  CHECK(workspaces == std::vector<std::string>{"acc.partials 3"});
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: not assembled");
    return;
  }
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
  REQUIRE(assembled.kernels.size() == 2);
  for (const auto &kernel : assembled.kernels) {
    INFO(kernel.name);
    CHECK_FALSE(kernel.spills());
  }
  // The slices' kernel has no arrival, the combine no MMA.
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_90a"));
  CHECK(ptx.find("atom.global.add.u32") == std::string::npos);
  size_t combine = ptx.find(".entry coalesce_out_combine");
  REQUIRE(combine != std::string::npos);
  CHECK(ptx.find("wgmma", combine) == std::string::npos);
  // On sm_90 the combine may start during the slices' tail: the slices'
  // kernel lets it, the combine waits for it before its first load.
  CHECK(program.kernels[1].start == KernelStart::DuringPreviousTail);
  CHECK(program.kernels[0].start == KernelStart::AfterPrevious);
  const std::string slices_kernel = ptx.substr(0, combine), combine_kernel = ptx.substr(combine);
  CHECK(slices_kernel.find("griddepcontrol.launch_dependents") != std::string::npos);
  CHECK(slices_kernel.find("griddepcontrol.wait") == std::string::npos);
  const size_t wait = combine_kernel.find("griddepcontrol.wait");
  REQUIRE(wait != std::string::npos);
  CHECK(wait < combine_kernel.find("ld.global"));
  CHECK(combine_kernel.find("griddepcontrol.launch_dependents") == std::string::npos);
}

TEST_CASE("before sm_90 the combine kernel starts after the slices' kernel, without grid dependencies") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: not assembled");
    return;
  }
  Gemm g = mma_gemm(MmaKind::BF16_m16n8k16, 3, SplitKMode::CombineKernel);
  Pipeline pipeline(g.out);
  const std::string &ptx = pipeline.ptx(parse_gpu_target("sm_80"));
  CHECK(ptx.find(".entry coalesce_out_combine") != std::string::npos);
  CHECK(ptx.find("griddepcontrol") == std::string::npos);
  PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_80"));
  CHECK(assembled.kernels.size() == 2);
}

TEST_CASE("the combine kernel refuses an output that reads another Func of its kernel") {
  // scale is computed in the output's tiles: the combine's kernel has none.
  auto gemm_with_scale = [](SplitKMode mode) {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    Func scale("scale"), out("scaled_out");
    scale(g.i, g.j) = g.bias(g.j) * 2.0f;
    out(g.i, g.j) = g.acc(g.i, g.j) * scale(g.i, g.j);
    schedule_gemm(out, g.acc, g.A, g.B, g.i, g.j, g.k, ffma_tiling(2, mode));
    scale.compute_at(out, Var("bj"));
    return out;
  };
  Func kernel = gemm_with_scale(SplitKMode::CombineKernel);
  std::string message = user_error_of([&] { lower_loop_nest(kernel); });
  CHECK_HAS(message, "combine-kernel mode");
  CHECK_HAS(message, "reads 'scale'");
  CHECK_HAS(message, "SplitKMode::Deterministic");
  // The last block's combine has the tile, and takes it.
  Func last_block = gemm_with_scale(SplitKMode::Deterministic);
  CHECK_NOTHROW(lower_loop_nest(last_block));
}

TEST_CASE("the combine kernel refuses an output with an update definition") {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  Func out("twice");
  out(g.i, g.j) = g.acc(g.i, g.j) + g.bias(g.j);
  out(g.i, g.j) = out(g.i, g.j) * 2.0f;
  schedule_gemm(out, g.acc, g.A, g.B, g.i, g.j, g.k, ffma_tiling(2, SplitKMode::CombineKernel));
  std::string message = user_error_of([&] { lower_loop_nest(out); });
  CHECK_HAS(message, "combine-kernel mode");
  CHECK_HAS(message, "'twice' has 1 update definition: use SplitKMode::Deterministic");
}

TEST_CASE("on a GPU, the combine kernel gives the deterministic combine's bits") {
  std::string why_not;
  if (!gpu::gpu_available(&why_not)) {
    MESSAGE("no GPU (", why_not, "): skipping");
    return;
  }
  Shape s{70, 130, 203};
  GemmData data = make_data(s.M, s.N, s.K, 9);
  Gemm kernel = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(5, SplitKMode::CombineKernel));
  Gemm last_block = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(5, SplitKMode::Deterministic));
  Buffer a({s.M, s.N}), b({s.M, s.N});
  a.poison();
  b.poison();
  Pipeline(kernel.out).realize_on_gpu(gemm_arguments(data, s.M, s.N, s.K, kernel.epilogue), a);
  Pipeline(last_block.out).realize_on_gpu(gemm_arguments(data, s.M, s.N, s.K, kernel.epilogue), b);
  CHECK(same_bits(a, b));
  CHECK(relative_error(a, reference(data, s.M, s.N, s.K, kernel.epilogue)) < 1e-5);
}

TEST_CASE("the warpgroup default combines its slices in a kernel, on 128 x 128 tiles at a deep K of few slices") {
  const MmaKind bf16 = MmaKind::BF16_wgmma_m64k16;
  struct Expect {
    int64_t M, N, K;
    int block, slices;
    SplitKMode mode;
  };
  const Expect cases[] = {
      {512, 512, 32768, 128, 8, SplitKMode::CombineKernel},  // 16 tiles of 128 x 128: one wave in 8 slices
      {128, 4096, 16384, 128, 4, SplitKMode::CombineKernel}, // 32 tiles: 4 slices
      {256, 256, 65536, 64, 16, SplitKMode::CombineKernel},  // 4 tiles of 128 x 128 would need 33 slices
      {64, 11008, 4096, 64, 1, SplitKMode::Deterministic},   // 172 tiles: no split; 64 rows: no 128-row tile
      {4096, 4096, 4096, 128, 1, SplitKMode::Deterministic},
  };
  for (const Expect &e : cases) {
    MmaTiling t = default_mma_tiling(bf16, e.M, e.N, e.K, 132);
    INFO(e.M, "x", e.N, "x", e.K, ": ", t.str());
    CHECK(t.block_m == e.block);
    CHECK(t.split_k == e.slices);
    if (e.slices > 1)
      CHECK(t.split_k_mode == e.mode);
  }
  // A decode step swapped keeps the last block's combine: its tiles are a
  // few rows of x.
  MmaTiling decode = default_mma_tiling(bf16, 16, 4096, 4096, 132);
  swap_ab_where_rows_are_few(decode, 16, 4096, 4096, 132);
  REQUIRE(decode.swap_ab);
  CHECK(decode.split_k > 1);
  CHECK(decode.split_k_mode == SplitKMode::Deterministic);
}

TEST_CASE("the combine kernel's own loops cannot capture an output variable of the same printed name") {
  // The output's variables named as the combine's loops print (the slice
  // variable kz, plus _block and _e): the sums must still land at (i, j).
  auto gemm = [](SplitKMode mode) {
    Gemm g = make_gemm(Epilogue::Bias);
    Var i("kz_block"), j("kz_e");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += g.A(i, g.k) * g.B(g.k, j);
    out(i, j) = acc(i, j) + g.bias(j);
    g.acc = acc;
    g.out = out;
    g.i = i;
    g.j = j;
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, ffma_tiling(3, mode));
    return g;
  };
  Gemm kernel = gemm(SplitKMode::CombineKernel), last_block = gemm(SplitKMode::Deterministic);
  Pipeline combined(kernel.out), reference_pipeline(last_block.out);
  for (Shape s : {Shape{37, 70, 3}, Shape{70, 65, 203}}) {
    INFO(s.M, "x", s.N, "x", s.K);
    GemmData data = make_data(s.M, s.N, s.K, 21);
    Buffer out = run(combined, data, s, Epilogue::Bias);
    CHECK(relative_error(out, reference(data, s.M, s.N, s.K, Epilogue::Bias)) < 1e-5);
    CHECK(same_bits(out, run(reference_pipeline, data, s, Epilogue::Bias)));
  }
}
