// split_k: a reduction split across GPU blocks. On the CPU (serial
// semantics, where the last slice of a tile is the last to arrive) against
// the double reference at ragged shapes, with split counts that do not divide
// K, K smaller than the split count, and K = 0, 1, 3; the K = 1 / K = 3 pair
// against the unfused chain and against the epilogue applied per slice; the
// folded bias added once; the workspace reused across calls and shapes; both
// combine modes; the FFMA and the tensor-core schedules; the rules; the
// default choice of split and tile; and the PTX (counters, fences, atomics)
// assembled by ptxas.

#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "codegen/PtxAssembler.h"
#include "dsl/FuncContents.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "scheduler/Lower.h"

#include <doctest/doctest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;
using namespace coalesce::testing;

TEST_CASE("FFMA split-K schedules match the double reference at ragged shapes, K = 0, 1, 3 and K below the split") {
  struct Case {
    int slices;
    SplitKMode mode;
    bool fold_bias;
    GemmTiling tiling;
  };
  const Case cases[] = {{3, SplitKMode::Deterministic, false, ffma_tiling(3, SplitKMode::Deterministic)},
                        {5, SplitKMode::Atomic, false, ffma_tiling(5, SplitKMode::Atomic)},
                        {4, SplitKMode::Deterministic, true, ffma_tiling(4, SplitKMode::Deterministic)},
                        {7, SplitKMode::Deterministic, false, small_m_tiling(16)}};
  for (Case c : cases) {
    c.tiling.split_k = c.slices;
    c.tiling.split_k_mode = c.mode;
    INFO(c.tiling.str(), c.fold_bias ? ", bias folded" : "");
    Gemm g = ffma_gemm(Epilogue::BiasGelu, c.tiling, c.fold_bias);
    Pipeline pipeline(g.out);
    for (Shape s : kShapes) {
      INFO(s.M, "x", s.N, "x", s.K);
      GemmData data = make_data(s.M, s.N, s.K, 7);
      Buffer out = run(pipeline, data, s, g.epilogue);
      CHECK(count_nan(out) == 0);
      CHECK(relative_error(out, reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
    }
  }
}

TEST_CASE("a split into one slice is the whole sum, through the workspace and the arrival") {
  Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
  g.acc.update().allow_reassociation();
  g.out.split_k(g.acc, g.k, Var("kz"), 1);
  Pipeline pipeline(g.out);
  CHECK(pipeline.loop_nest().find("last_arrival(acc.tile_counters[bi, bj], 1)") != std::string::npos);
  for (Shape s : {Shape{37, 70, 0}, Shape{17, 130, 50}}) {
    GemmData data = make_data(s.M, s.N, s.K, 4);
    CHECK(relative_error(run(pipeline, data, s, g.epilogue), reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
  }
}

TEST_CASE("split-K runs the epilogue once, after the combine: the K = 1 / K = 3 pair") {
  for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic})
    for (bool fold : {false, true}) {
      const int slices = 3;
      Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(slices, mode), fold);
      Pipeline pipeline(g.out);
      for (int K : {1, 3}) {
        INFO(split_k_mode_name(mode), fold ? ", bias folded" : "", ", K = ", K);
        Shape s{19, 33, K};
        GemmData data = make_data(s.M, s.N, s.K, 11);
        Buffer out = run(pipeline, data, s, g.epilogue);
        CHECK(relative_error(out, unfused_chain(data, s.M, s.N, s.K, g.epilogue)) < 1e-6);
        // The mistake the pair exists to catch, at every slice count.
        CHECK(relative_error(out, epilogue_per_slice(data, s, slices, g.epilogue)) > 1e-2);
      }
    }
}

TEST_CASE("a bias folded into the initial value is added once, by slice 0 alone") {
  Gemm g = ffma_gemm(Epilogue::Bias, ffma_tiling(4, SplitKMode::Deterministic), true);
  Pipeline pipeline(g.out);
  // K = 0: every slice is empty and the result is the bias, exactly.
  Shape s{5, 70, 0};
  GemmData data = make_data(s.M, s.N, s.K, 3);
  Buffer out = run(pipeline, data, s, g.epilogue);
  for (int i = 0; i < s.M; ++i)
    for (int j = 0; j < s.N; ++j)
      REQUIRE(out(i, j) == data.bias.values()[j]);
  // K = 2 with 4 slices: two slices are empty; a bias per slice would be 4x.
  s.K = 2;
  data = make_data(s.M, s.N, s.K, 3);
  CHECK(relative_error(run(pipeline, data, s, g.epilogue), reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-6);
}

TEST_CASE("the workspace is kept between calls: counters and atomic tiles are left zeroed, at any shape") {
  for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic}) {
    INFO(split_k_mode_name(mode));
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, mode));
    Pipeline pipeline(g.out);
    Shape a{40, 70, 90}, b{70, 130, 33};
    GemmData da = make_data(a.M, a.N, a.K, 1), db = make_data(b.M, b.N, b.K, 2);
    Buffer first = run(pipeline, da, a, g.epilogue);
    Buffer other = run(pipeline, db, b, g.epilogue);
    Buffer again = run(pipeline, da, a, g.epilogue);
    CHECK(same_bits(first, again));
    CHECK(relative_error(other, reference(db, b.M, b.N, b.K, g.epilogue)) < 1e-5);
    CHECK(relative_error(first, reference(da, a.M, a.N, a.K, g.epilogue)) < 1e-5);
  }
}

TEST_CASE("the kernel's shared memory counts last_arrival's word, so tiles at the static limit go dynamic") {
  Gemm split = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(2, SplitKMode::Deterministic));
  Gemm whole = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
  CHECK(lower_for_gpu(split.out).kernels.at(0).shared_bytes == lower_for_gpu(whole.out).kernels.at(0).shared_bytes + 16);
}

TEST_CASE("the workspace is an argument of the lowered program, not of the caller") {
  Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::Deterministic));
  std::vector<Argument> args = lowered_arguments(g.out);
  std::vector<std::string> workspaces;
  for (const Argument &arg : args)
    if (arg.is_workspace)
      workspaces.push_back(arg.name + " " + std::to_string(arg.extents.size()));
  // Deterministic slices lie by tile (two block loops), slice, then the
  // tile's registers.
  CHECK(workspaces == std::vector<std::string>{"acc.partials 4", "acc.tile_counters 2"});
  for (const Argument &arg : args)
    if (arg.name == "acc.partials") {
      CHECK(is_const(arg.extents.at(2), 3));
      CHECK(arg.extents.at(3).as<IntImm>() != nullptr); // the tile's registers: a constant
    }
  Gemm atomic = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::Atomic));
  for (const Argument &arg : lowered_arguments(atomic.out))
    if (arg.name == "acc.partials")
      CHECK(arg.extents.size() == 2); // one tile for all slices
  // Passing it by name is an error: the runtime owns it.
  Pipeline pipeline(g.out);
  GemmData data = make_data(4, 4, 4, 1);
  Buffer out({4, 4});
  Arguments given = gemm_arguments(data, 4, 4, 4, g.epilogue);
  given.emplace("acc.partials", data.a);
  CHECK_HAS(user_error_of([&] { pipeline.realize_on_cpu(given, out); }), "unknown argument 'acc.partials'");
}

TEST_CASE("tensor-core split-K schedules (bf16, f16, tf32) match the reference at ragged shapes") {
  struct Case {
    MmaKind kind;
    int slices;
    SplitKMode mode;
  };
  const Case cases[] = {{MmaKind::BF16_m16n8k16, 3, SplitKMode::Deterministic},
                        {MmaKind::F16_m16n8k16, 2, SplitKMode::Atomic},
                        {MmaKind::TF32_m16n8k8, 5, SplitKMode::Deterministic}};
  for (const Case &c : cases) {
    INFO(mma_kind_name(c.kind), ", ", c.slices, " slices, ", split_k_mode_name(c.mode));
    Gemm g = mma_gemm(c.kind, c.slices, c.mode);
    Pipeline pipeline(g.out);
    for (Shape s : kShapes) {
      INFO(s.M, "x", s.N, "x", s.K);
      GemmData data = mma_data(c.kind, s, 5);
      Buffer out = run(pipeline, data, s, g.epilogue);
      CHECK(relative_error(out, reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
      if (s.K == 1 || s.K == 3)
        CHECK(relative_error(out, epilogue_per_slice(data, s, c.slices, g.epilogue)) > 1e-2);
    }
  }
}

TEST_CASE("the partial sums lie in the registers' order: stored and read slice by slice without the edge's guards") {
  // Element by element, each element's loads of every slice waited for the
  // memory in turn; slice by slice, a thread has one slice's loads of all
  // its elements in flight. The edge's guards would put a branch between
  // two loads: every element of a tile has its place in the workspace
  // (its tile, its slice, its register with the lanes fastest), so the
  // partial sums are stored and read without them.
  Gemm g = mma_gemm(MmaKind::BF16_m16n8k16, 3, SplitKMode::Deterministic);
  const std::string nest = Pipeline(g.out).loop_nest();
  std::istringstream lines(nest);
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);)
    all.push_back(line);
  auto indent = [](const std::string &line) { return line.find_first_not_of(' '); };
  // The statement's block of lines starting at `first`.
  auto block_of = [&](size_t first) {
    size_t end = first + 1;
    while (end < all.size() && indent(all[end]) > indent(all[first]))
      ++end;
    return end;
  };
  size_t slice_loop = all.size(), partial_store = all.size();
  for (size_t n = 0; n < all.size(); ++n) {
    if (all[n].find("for kz_sum in serial(1, 2):") != std::string::npos)
      slice_loop = n;
    if (partial_store == all.size() && all[n].find("acc.partials[") < all[n].find(" = "))
      partial_store = n;
  }
  REQUIRE(slice_loop < all.size());
  REQUIRE(partial_store < all.size());
  // The register index: the lanes (lane) fastest, the fragment's
  // dimensions outside them.
  CHECK(all[partial_store].find("acc.partials[bi, bj, kz, ") != std::string::npos);
  CHECK(all[partial_store].find("*32 + lane] = acc[") != std::string::npos);
  // No guard between the thread loops of the partial stores and the store.
  size_t threads = partial_store;
  while (threads > 0 && all[threads].find("gpu_thread.y") == std::string::npos)
    --threads;
  for (size_t n = threads; n < partial_store; ++n) {
    INFO(all[n]);
    CHECK(all[n].compare(indent(all[n]), 3, "if ") != 0);
  }
  // The slice loop holds the tile's thread loops, no guard, no clamp.
  size_t end = block_of(slice_loop);
  bool reads = false;
  for (size_t n = slice_loop + 1; n < end; ++n) {
    INFO(all[n]);
    CHECK(all[n].compare(indent(all[n]), 3, "if ") != 0);
    CHECK(all[n].find("max(min(") == std::string::npos);
    reads |= all[n].find("acc.partials[bi, bj, kz_sum, ") != std::string::npos;
  }
  CHECK(all[slice_loop + 1].find("gpu_thread") != std::string::npos);
  CHECK(reads);
  // After it, the epilogue: its ragged copy stores under the edge's guards.
  std::string after;
  for (size_t n = end; n < all.size(); ++n)
    after += all[n] + "\n";
  CHECK(after.find("if j < N:") != std::string::npos);
  CHECK(after.find("out[i, j] =") != std::string::npos);
}

TEST_CASE("warpgroup MMA split-K schedules (bf16, f16) match the reference and assemble") {
  for (MmaKind kind : {MmaKind::BF16_wgmma_m64k16, MmaKind::F16_wgmma_m64k16}) {
    Type in = kind == MmaKind::BF16_wgmma_m64k16 ? BFloat(16) : Float(16);
    Gemm g = make_gemm(Epilogue::BiasGelu, in, Float(32));
    MmaTiling t = default_mma_tiling(kind, 64, 64, GpuTarget().sm_count());
    t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
    t.split_k = 3;
    t.split_k_mode = kind == MmaKind::BF16_wgmma_m64k16 ? SplitKMode::Deterministic : SplitKMode::Atomic;
    INFO(t.str());
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline pipeline(g.out);
    for (Shape s : {Shape{37, 70, 0}, Shape{37, 70, 3}, Shape{70, 65, 203}}) {
      INFO(s.M, "x", s.N, "x", s.K);
      GemmData data = make_data(s.M, s.N, s.K, 5, in);
      CHECK(relative_error(run(pipeline, data, s, g.epilogue), reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
    }
    if (ptxas_available()) {
      PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
      REQUIRE(assembled.kernels.size() == 1);
      CHECK_FALSE(assembled.kernels.front().spills());
    }
  }
}

TEST_CASE("a split that would run the epilogue on partial sums, or change the sum silently, is rejected") {
  SUBCASE("the epilogue fused at the slice loop") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::Deterministic));
    std::string message = user_error_of([&] { g.out.fuse_epilogue(g.acc, Var("kz")); });
    CHECK_HAS(message, "partial sums");
    CHECK_HAS(message, "after the slices are combined");
  }
  SUBCASE("a reduction loop mapped to GPU blocks") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    RVar ko("ko"), ki("ki");
    g.acc.update().split(g.k, ko, ki, 64);
    std::string message = user_error_of([&] { g.acc.update().gpu_blocks({ko}); });
    CHECK_HAS(message, "partial sums");
    CHECK_HAS(message, "split_k");
  }
  SUBCASE("without allow_reassociation") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
    g.out.split_k(g.acc, g.k, Var("kz"), 3);
    std::string message = user_error_of([&] { lower_loop_nest(g.out); });
    CHECK_HAS(message, "allow_reassociation");
    CHECK_HAS(message, "slice order");
  }
  SUBCASE("before the producer is fused") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    CHECK_HAS(user_error_of([&] { g.out.split_k(g.acc, g.k, Var("kz"), 3); }), "must be fused into 'out' first");
  }
  SUBCASE("called on the sum itself: the advice is to call it on the output") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
    std::string message = user_error_of([&] { g.acc.split_k(g.acc, g.k, Var("kz"), 3); });
    CHECK_HAS(message, "split_k is called on 'acc' itself; call it on the Func that reads 'acc'");
    CHECK_HAS(message, "out.split_k(acc, k, kz, 3)");
    CHECK(message.find("acc.fuse_epilogue(acc") == std::string::npos);
  }
  SUBCASE("a slice count out of range, or a name taken") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
    CHECK_HAS(user_error_of([&] { g.out.split_k(g.acc, g.k, Var("kz"), 0); }), "between 1 and");
    CHECK_HAS(user_error_of([&] { g.out.split_k(g.acc, g.k, Var("bi"), 2); }), "already a loop of 'out'");
    CHECK_HAS(user_error_of([&] { g.out.split_k(g.acc, RVar("ko"), Var("kz"), 2); }), "not a reduction variable");
  }
  SUBCASE("fused outside the innermost block loop") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ii, jj});
    g.out.fuse_epilogue(g.acc, bi);
    g.acc.update().allow_reassociation();
    g.out.split_k(g.acc, g.k, Var("kz"), 2);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(g.out); }), "outside block loop 'bj'");
  }
}

TEST_CASE("the default splits K only where the tiles leave multiprocessors idle, and picks small-M tiles") {
  // The five shapes that motivated split-K, and two that must not change.
  GemmTiling decode = default_gemm_tiling(16, 4096, 4096, GpuTarget().sm_count());
  CHECK(decode.block_m == 16);
  CHECK(decode.split_k > 1);
  CHECK(default_gemm_tiling(64, 11008, 4096, GpuTarget().sm_count()).block_m == 64);
  CHECK(default_gemm_tiling(64, 11008, 4096, GpuTarget().sm_count()).split_k > 1);
  CHECK(default_gemm_tiling(128, 4096, 16384, GpuTarget().sm_count()).split_k > 1);
  CHECK(default_gemm_tiling(512, 512, 32768, GpuTarget().sm_count()).split_k > 1);
  CHECK(default_gemm_tiling(256, 256, 65536, GpuTarget().sm_count()).split_k > 1);
  CHECK(default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()).split_k == 1);
  CHECK(default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count()).split_k == 1);
  CHECK(default_gemm_tiling(256, 256, 0, GpuTarget().sm_count()).split_k == 1); // K unknown until run time
  // Each slice at least kMinSliceDepth deep, at most kMaxDefaultSlices.
  CHECK(default_split_k(1, kMinSplitDepth - 1, 8, GpuTarget().sm_count()) == 1);
  CHECK(default_split_k(1, kMinSplitDepth, 8, GpuTarget().sm_count()) == kMinSplitDepth / kMinSliceDepth);
  CHECK(default_split_k(1, 1 << 20, 8, GpuTarget().sm_count()) == kMaxDefaultSlices);
  CHECK(default_split_k(264, 1 << 20, 8, GpuTarget().sm_count()) == 1);
  CHECK(default_split_k(264, 1 << 20, 8, 132, 8) == 4); // small blocks: more of them per multiprocessor
  CHECK(split_k_blocks_per_sm(256) == 2);
  CHECK(split_k_blocks_per_sm(64) == 8);
  CHECK(default_mma_tiling(MmaKind::BF16_m16n8k16, 256, 256, 65536, 132).split_k > 1);
  CHECK(default_mma_tiling(MmaKind::BF16_m16n8k16, 4096, 4096, 4096, 132).split_k == 1);
  // Each default lowers (every check runs) at each of the five shapes.
  const Shape five[] = {{16, 4096, 4096}, {64, 11008, 4096}, {128, 4096, 16384}, {512, 512, 32768}, {256, 256, 65536}};
  for (Shape s : five) {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, default_gemm_tiling(s.M, s.N, s.K, GpuTarget().sm_count()));
    CHECK_NOTHROW(lower_loop_nest(g.out));
  }
}

TEST_CASE("the tilings fill the multiprocessors they are given; without a device, the target's GPU's") {
  // Each target names the GPU its figures are for; sm_90a's is the H200.
  CHECK(GpuTarget().sm() == "sm_90a");
  CHECK(GpuTarget().sm_count() == 132);
  CHECK(std::string(GpuTarget().description()).find("H200") != std::string::npos);
  CHECK(parse_gpu_target("sm_80").sm_count() == 108);
  CHECK(parse_gpu_target("sm_89").sm_count() == 58);
  // 1024^2 is 64 tiles of 128^2: too few for 132 multiprocessors, enough for 58.
  CHECK(default_gemm_tiling(1024, 1024, 1024, 132).block_m == 64);
  CHECK(default_gemm_tiling(1024, 1024, 1024, 58).block_m == 128);
  CHECK(default_mma_tiling(MmaKind::BF16_m16n8k16, 1024, 1024, 132).block_m == 64);
  CHECK(default_mma_tiling(MmaKind::BF16_m16n8k16, 1024, 1024, 58).block_m == 128);
  // A split aims at blocks_per_sm blocks on each multiprocessor given.
  CHECK(default_split_k(8, 1 << 20, 8, 132, 2) == kMaxDefaultSlices);
  CHECK(default_split_k(8, 1 << 20, 8, 16, 2) == 4);
  // With a GPU, the device's count; without one, the target's.
  int expected = gpu::gpu_available() ? gpu::Device::get().sm_count() : parse_gpu_target("sm_80").sm_count();
  CHECK(gpu::sm_count_for(parse_gpu_target("sm_80")) == expected);
}

TEST_CASE("split-K kernels assemble with ptxas: per-tile counters behind GPU-scope fences, float atomics") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  struct Case {
    std::string what;
    Gemm gemm;
    std::vector<std::string> expected;
  };
  Case cases[] = {
      {"fp32 deterministic, 16-row tile", ffma_gemm(Epilogue::BiasGelu, [] {
         GemmTiling t = small_m_tiling(16);
         t.split_k = 8;
         return t;
       }()),
       {"fence.acq_rel.gpu", "atom.global.add.u32"}},
      {"fp32 atomic", ffma_gemm(Epilogue::BiasGelu, ffma_tiling(4, SplitKMode::Atomic)),
       {"fence.acq_rel.gpu", "atom.global.add.u32", "add.f32"}},
      {"bf16 tensor cores, deterministic", mma_gemm(MmaKind::BF16_m16n8k16, 4, SplitKMode::Deterministic),
       {"mma.sync.aligned", "fence.acq_rel.gpu", "atom.global.add.u32"}},
  };
  for (Case &c : cases) {
    Pipeline pipeline(c.gemm.out);
    for (std::string sm : {"sm_90a", "sm_80"}) {
      INFO(c.what, " for ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      for (const std::string &text : c.expected)
        CHECK_MESSAGE(ptx.find(text) != std::string::npos, "no ", text);
      if (c.what.find("atomic") != std::string::npos)
        CHECK((ptx.find("atom.global.add.f32") != std::string::npos ||
               ptx.find("red.global.add.f32") != std::string::npos));
      PtxasResult assembled = pipeline.assemble(target);
      REQUIRE(assembled.kernels.size() == 1);
      CHECK_FALSE(assembled.kernels.front().spills());
    }
  }
}

TEST_CASE("on a GPU, deterministic split-K gives the same bits on every launch, and the reference's values") {
  check_same_bits_on_gpu(ffma_gemm(Epilogue::BiasGelu, ffma_tiling(5, SplitKMode::Deterministic)));
}
