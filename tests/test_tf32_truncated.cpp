// The truncating tf32 kinds (MmaKind::TF32Truncated_m16n8k8 and
// TF32Truncated_wgmma_m64k8): f32 operands multiplied as the tensor cores
// read f32 bits, their top 19 (truncate_to_tf32), so nothing rounds them
// first: the TMA reads A, and a B stored N x K, as they lie, and only a B
// stored K x N goes through a copy (transposed, not rounded). On the CPU,
// which runs the statements the GPU runs, against the double reference on
// truncated data at ragged shapes and the K = 1 / K = 3 pair; the nests;
// the rules; and the kernels through ptxas. (coalesce-gpu-check
// --sections=tf32-truncated runs them on the GPU, bit for bit at K = 1.)

#include "AotTool.h"
#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;
using coalesce::testing::user_error_of;

namespace {

constexpr MmaKind kWarp = MmaKind::TF32Truncated_m16n8k8;
constexpr MmaKind kGroup = MmaKind::TF32Truncated_wgmma_m64k8;

void truncate_all(Buffer &b) {
  for (float &v : b.values())
    v = float_truncated_to_tf32(v);
}

void round_all(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
}

// B as the algorithm reads it, K x N, from data drawn for a B stored N x K.
Buffer as_k_by_n(const Buffer &b_nk, int N, int K) {
  Buffer b({K, N});
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      b(k, j) = b_nk.at(j, k);
  return b;
}

struct Case {
  const char *name;
  MmaTiling tiling;
  BLayout layout;
};

std::vector<Case> cases() {
  MmaTiling warp = coalesce::testing::one_tile_tiling(kWarp);
  MmaTiling async = coalesce::testing::one_tile_tiling(kGroup);
  async.tma = false;
  MmaTiling tma = coalesce::testing::one_tile_tma_tiling(kGroup);
  REQUIRE(tma.tma_padded_copies == PaddedCopies::None);
  return {{"warp MMA", warp, BLayout::KN},
          {"warp MMA, B stored N x K", warp, BLayout::NK},
          {"warpgroup, cp.async", async, BLayout::KN},
          {"warpgroup, TMA, B stored K x N", tma, BLayout::KN},
          {"warpgroup, TMA, B stored N x K", tma, BLayout::NK}};
}

struct Run {
  Buffer out;
  GemmData data;   // as drawn; data.b as the algorithm reads it (K x N)
  GemmData chosen; // the same with A and B truncated or rounded
};

// One run on data drawn at random (not tf32 values), and the reference data
// with each operand truncated (`truncate`) or rounded to tf32.
Run run(const Case &c, int M, int N, int K, Epilogue e, bool truncate = true) {
  Gemm g = make_gemm(e, Float(32), Float(32), c.layout);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, c.tiling);
  GemmData drawn = make_data(M, N, K, 29);
  Buffer b_as_stored = drawn.b;
  if (c.layout == BLayout::NK) {
    b_as_stored = Buffer({N, K});
    b_as_stored.fill_random(30);
    drawn.b = as_k_by_n(b_as_stored, N, K);
  }
  Run r{Buffer({M, N}), drawn, drawn};
  Arguments args = gemm_arguments(drawn, M, N, K, e);
  args.erase("B");
  args.emplace("B", b_as_stored);
  r.out.poison();
  Pipeline(g.out).realize_on_cpu(args, r.out);
  for (Buffer *b : {&r.chosen.a, &r.chosen.b})
    truncate ? truncate_all(*b) : round_all(*b);
  return r;
}

} // namespace

TEST_CASE("a truncating tf32 kind multiplies the top 19 bits of each operand, on every path") {
  for (const Case &c : cases()) {
    INFO(c.name, ": ", c.tiling.str());
    // Ragged everywhere (K not a multiple of 4: element copies), and rows
    // of whole 16-byte vectors (the TMA's boxes).
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {127, 129, 131}, {70, 72, 100}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      Run r = run(c, M, N, K, Epilogue::None);
      REQUIRE(count_nan(r.out) == 0);
      // Exact up to f32 sums against the product of the truncated inputs.
      CHECK(relative_error(r.out, reference(r.chosen, M, N, K, Epilogue::None)) < 1e-6);
      // Not the product of the rounded ones: truncation drops toward zero,
      // and over K > 1 terms the difference is far above f32's sums.
      if (K > 1) {
        GemmData rounded = r.data;
        round_all(rounded.a);
        round_all(rounded.b);
        CHECK(relative_error(r.out, reference(rounded, M, N, K, Epilogue::None)) > 1e-5);
      }
    }
  }
}

TEST_CASE("a truncating tf32 kind masks the low 13 bits of every operand (infinities and NaNs too)") {
  auto bits = [](uint32_t b) {
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  };
  // One product each, by 1: 1 + 2^-23 and 1 + 2^-11 + 2^-12 (which rounding
  // would take up to 1 + 2^-10) truncate to 1; a NaN whose payload lies
  // only in the dropped bits reads as an infinity (the H100 gives +inf for
  // 1 * 0x7F800001), one with a kept payload bit stays a NaN; a subnormal
  // with zero low bits is kept.
  const uint32_t a_bits[] = {0x3F800001u, 0x3F801800u, 0x7F800001u, 0x00400000u, 0x7F800000u, 0x80000000u, 0xFFC00001u};
  const int n = 7;
  for (const Case &c : cases()) {
    INFO(c.name);
    Gemm g = make_gemm(Epilogue::None, Float(32), Float(32), c.layout);
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, c.tiling);
    Buffer a({n, 1}), b({1, 1}), out({n, 1});
    for (int r = 0; r < n; ++r)
      a(r, 0) = bits(a_bits[r]);
    b(0, 0) = 1.0f;
    Pipeline(g.out).realize_on_cpu({{"A", a}, {"B", b}, {"M", n}, {"N", 1}, {"K", 1}}, out);
    CHECK(out(0, 0) == 1.0f);
    CHECK(out(1, 0) == 1.0f);
    CHECK(out(2, 0) == bits(0x7F800000u));
    CHECK(out(3, 0) == bits(0x00400000u));
    CHECK(out(4, 0) == bits(0x7F800000u));
    CHECK(out(5, 0) == 0.0f);
    CHECK(std::isnan(out(6, 0)));
  }
}

TEST_CASE("a truncating tf32 kind's fused epilogue runs once, after the whole reduction (K = 0 / 1 / 3)") {
  for (const Case &c : cases())
    for (Epilogue e : {Epilogue::Bias, Epilogue::BiasGelu})
      for (int K : {0, 1, 3}) {
        INFO(c.name);
        CAPTURE(K);
        Run r = run(c, 70, 130, K, e);
        CHECK(relative_error(r.out, unfused_chain(r.chosen, 70, 130, K, e)) < 1e-6);
      }
}

TEST_CASE("the TMA reads a truncating kind's A and an N x K B as they lie, and a K x N B through a transposed copy") {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kGroup);
  SUBCASE("B stored N x K: no copy at all") {
    Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32), BLayout::NK);
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    std::string nest = Pipeline(g.out).loop_nest();
    CHECK_HAS(nest, "tensor_copy A[");
    CHECK_HAS(nest, "tensor_copy B[");
    CHECK(nest.find("_padded") == std::string::npos);
    CHECK(nest.find("round_to_tf32") == std::string::npos);
    CHECK_HAS(nest, "truncate_to_tf32(");
  }
  SUBCASE("B stored K x N: B transposed by a kernel of its own, not rounded") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    std::string nest = Pipeline(g.out).loop_nest();
    CHECK_HAS(nest, "tensor_copy A[");
    CHECK_HAS(nest, "tensor_copy B_padded[");
    CHECK_HAS(nest, "allocate B_padded.B_transpose[32][33] f32 in shared");
    CHECK(nest.find("A_padded") == std::string::npos);
    CHECK(nest.find("round_to_tf32") == std::string::npos);
  }
  SUBCASE("the default tiling asks for copies only where rows are ragged") {
    MmaTiling d = default_mma_tiling(kGroup, 4096, 4096, 4096, GpuTarget().sm_count());
    CHECK(d.uses_tma());
    CHECK(d.tma_padded_copies == PaddedCopies::None);
    CHECK(d.k_step == 32);
    CHECK_HAS(d.str(), "A and B as they lie");
    CHECK(default_mma_tiling(kGroup, 4096, 4097, 4096, GpuTarget().sm_count()).tma_padded_copies == PaddedCopies::Both);
  }
}

TEST_CASE("a truncating kind's schedule that breaks a rule is rejected with the rule") {
  SUBCASE("the TMA reading a K x N B as it lies") {
    Gemm g = coalesce::testing::mma_tiled(kGroup, Float(32), Float(32));
    RVar ko("ko"), kk("kk");
    TmaCopies tma;
    tma.stages = 3;
    CHECK_HAS(user_error_of([&] {
                g.acc.update()
                    .mma(g.k, ko, kk, 32)
                    .allow_reassociation()
                    .stage_in_shared(g.A, ko, {}, tma)
                    .stage_in_shared(g.B, ko, {}, tma);
                Pipeline(g.out).loop_nest();
              }),
              "tf32 (truncated) wgmma reads 'B' K-major, but it is stored K x N and 'B' is staged with TmaCopies, "
              "which copy boxes as they lie; set TmaCopies::padded_copy to PaddedCopy::Always");
  }
}

TEST_CASE("truncating tf32 kernels assemble for sm_90a, with no rounding instruction") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  MmaTiling warp = default_mma_tiling(kWarp, 4096, 4096, 4096, GpuTarget().sm_count());
  MmaTiling group = default_mma_tiling(kGroup, 4096, 4096, 4096, GpuTarget().sm_count());
  for (const auto &[t, layout, kernels] : std::vector<std::tuple<MmaTiling, BLayout, int>>{
           {warp, BLayout::KN, 1}, {group, BLayout::NK, 1}, {group, BLayout::KN, 2}}) {
    INFO(t.str());
    Gemm g = make_gemm(Epilogue::BiasGelu, Float(32), Float(32), layout);
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    Pipeline pipeline(g.out);
    GpuTarget target = parse_gpu_target("sm_90a");
    const std::string &ptx = pipeline.ptx(target);
    CHECK_HAS(ptx, is_warpgroup_mma(t.kind) ? ".f32.tf32.tf32" : "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    CHECK(ptx.find("cvt.rna.tf32.f32") == std::string::npos);
    // The GEMM, and for a K x N B the kernel that transposes it.
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(target), kernels);
  }
}

TEST_CASE("coalesce-aot --dtype=tf32-truncated writes one kernel for an N x K B, and refuses tuning") {
  using namespace aot_testing;
  TempDir dir;
  Result made = aot("--dtype=tf32-truncated --M=1000 --N=1024 --K=512 --b=nk --name=g --output-dir=.", dir.path);
  INFO(made.err);
  REQUIRE(made.status == 0);
  const std::string ptx = read_file(dir.path / "g.ptx");
  CHECK_HAS(ptx, "k8.f32.tf32.tf32");
  CHECK_HAS(ptx, "wgmma.mma_async.sync.aligned.m64n");
  CHECK(ptx.find("cvt.rna.tf32.f32") == std::string::npos);
  // The GEMM alone: no kernel copies A or W first.
  size_t entries = 0;
  for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1))
    ++entries;
  CHECK(entries == 1);
  check_refused("--dtype=tf32-truncated --M=64 --N=64 --K=64 --tuning-db=db.json --name=g",
                "GEMM problem: dtype 'tf32-truncated' is not one of f32, tf32, bf16, f16");
}
