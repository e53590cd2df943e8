// The CPU side of the GPU check and the benchmark for every precision
// (bench/common/Precisions.h): parsing --precisions, the tf32 rounding of the
// reference, the bias grid shared by every bias type, the tile choice per
// shape, and, for each tiling the choice can make, the exact kernels the GPU
// check runs (tensor-core schedule + bias + GELU in tf32, bf16 and f16) run
// here on the CPU against the same double reference at the same tolerance,
// ragged and K = 1 / 3 included, then assembled by ptxas without spills.

#include "bench/common/Precisions.h"
#include "codegen/PtxAssembler.h"
#include "examples/Reference.h"

#include <array>
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>

using namespace coalesce;
using namespace coalesce::examples;
using bench::Comparison;
using bench::Precision;

namespace {

std::vector<Precision> parse(const std::string &list, std::string *error = nullptr) {
  std::string ignored;
  return bench::parse_precisions(list, error ? error : &ignored);
}

/// The double reference the GPU check uses: the inputs' exact values, tf32
/// inputs rounded as the instruction rounds them.
Buffer double_reference(Precision p, GemmData data, int M, int N, int K) {
  if (p == Precision::TF32)
    for (Buffer *b : {&data.a, &data.b})
      for (size_t n = 0; n < b->size(); ++n)
        b->set(n, float_to_tf32(b->get(n)));
  return examples::reference(data, M, N, K, Epilogue::BiasGelu);
}

/// Every tiling mma_tiling picks for the benchmark's and the check's shapes.
std::vector<MmaTiling> tilings_in_use(Precision p, bool warpgroup = false) {
  const int shapes[][2] = {{1, 1},       {127, 129},   {1024, 1024}, {2048, 2048}, {4096, 4096}, {8192, 8192},
                           {4093, 4091}, {8192, 11008}, {16, 4096},  {64, 11008}, {67, 45},    {131, 133}};
  std::vector<MmaTiling> result;
  std::set<std::string> seen;
  for (const auto &s : shapes) {
    MmaTiling t = bench::mma_tiling(p, s[0], s[1], 132, warpgroup);
    if (seen.insert(t.str()).second)
      result.push_back(t);
  }
  return result;
}

} // namespace

TEST_CASE("--precisions: all, a list in its order without repeats, and a clear error for a bad name") {
  CHECK(parse("all") == bench::all_precisions());
  CHECK(parse("bf16,tf32,bf16") == std::vector<Precision>{Precision::BF16, Precision::TF32});
  CHECK(parse("f16") == std::vector<Precision>{Precision::F16});
  std::string error;
  CHECK(parse("bf16,fp64", &error).empty());
  CHECK(error.find("fp64") != std::string::npos);
  CHECK(parse(",", &error).empty());
  CHECK(error == "no precision selected");
}

TEST_CASE("tf32 rounding: to nearest on the 10-bit mantissa, ties away from zero, infinities and NaN kept") {
  const float one = 1.0f;
  CHECK(float_to_tf32(one) == one);
  CHECK(float_to_tf32(1.0f + std::ldexp(1.0f, -12)) == one);                           // below half: down
  CHECK(float_to_tf32(1.0f + std::ldexp(1.0f, -11)) == 1.0f + std::ldexp(1.0f, -10)); // tie: away
  CHECK(float_to_tf32(-1.0f - std::ldexp(1.0f, -11)) == -1.0f - std::ldexp(1.0f, -10));
  CHECK(std::isinf(float_to_tf32(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(float_to_tf32(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("the bias grid: every value is exact in f32, bf16 and f16, so every bias vector holds the same numbers") {
  Buffer raw({4096});
  raw.fill_random(3);
  Buffer bf16({1}, BFloat(16)), f16({1}, Float(16));
  for (size_t n = 0; n < raw.size(); ++n) {
    const float x = bench::bias_on_common_grid(raw.get(n));
    CHECK(std::fabs(x - raw.get(n)) <= std::ldexp(1.0f, -8) * std::fabs(raw.get(n)) + std::ldexp(1.0f, -14));
    bf16.set(size_t(0), x);
    f16.set(size_t(0), x);
    CHECK(bf16.get(0) == x);
    CHECK(f16.get(0) == x);
  }
}

TEST_CASE("tolerances: one output rounding is the unit roundoff; looser where cuBLAS rounds more or differently") {
  CHECK(bench::output_unit_roundoff(Precision::BF16) == std::ldexp(1.0, -8));
  CHECK(bench::output_unit_roundoff(Precision::F16) == std::ldexp(1.0, -11));
  for (Precision p : bench::all_precisions()) {
    CAPTURE(reference::precision_name(p));
    CHECK(bench::tolerance(p, Comparison::OursVsDouble) <= bench::tolerance(p, Comparison::OursVsCublas));
    CHECK(bench::tolerance(p, Comparison::OursVsCublas) < bench::tolerance(p, Comparison::OursVsLt));
    CHECK(bench::tolerance(p, Comparison::GemmVsCublas) < bench::tolerance(p, Comparison::ChainVsCublas));
  }
  CHECK(bench::tolerance(Precision::FP32, Comparison::OursVsCublas) < 1.01e-4); // the FFMA check's 1e-4
  CHECK(bench::tolerance(Precision::F16, Comparison::OursVsDouble) < bench::tolerance(Precision::BF16, Comparison::OursVsDouble));
}

TEST_CASE("the tile choice gives every SM a block where it can, and no 128-row tile to a short M") {
  CHECK(bench::mma_tiling(Precision::BF16, 8192, 8192, 132).block_m == 128);
  CHECK(bench::mma_tiling(Precision::BF16, 8192, 8192, 132).block_n == 128);
  CHECK(bench::mma_tiling(Precision::BF16, 1024, 1024, 132).block_m == 64); // 64 blocks of 128^2 < 132 SMs
  CHECK(bench::mma_tiling(Precision::BF16, 16, 4096, 132).block_m == 64);
  CHECK(bench::mma_tiling(Precision::F16, 64, 11008, 132).block_m == 64);
  CHECK(bench::mma_tiling(Precision::TF32, 4096, 4096, 132).k_step == 16);
  CHECK(bench::mma_tiling(Precision::BF16, 4096, 4096, 132).kind == MmaKind::BF16_m16n8k16);
  CHECK(bench::mma_tiling(Precision::F16, 4096, 4096, 132).kind == MmaKind::F16_m16n8k16);
  // Every tensor-core precision has a warpgroup MMA, tf32 too.
  CHECK(bench::has_warpgroup_mma(Precision::TF32));
  CHECK_FALSE(bench::has_warpgroup_mma(Precision::FP32));
  CHECK(bench::mma_tiling(Precision::TF32, 4096, 4096, 132, true).kind == MmaKind::TF32_wgmma_m64k8);
  CHECK(bench::mma_tiling(Precision::TF32, 4096, 4096, 132, true).k_step == 32);
  // Through the TMA, from copies rounded to tf32 (B transposed).
  CHECK(bench::mma_tiling(Precision::TF32, 4096, 4096, 132, true).uses_tma());
  CHECK(bench::mma_tiling(Precision::TF32, 4096, 4096, 132, true).tma_padded_copies == PaddedCopies::Both);
  CHECK(bench::mma_tiling_for_shape(Precision::TF32, 4096, 4096, 4096, 132, true).tma_padded_copies ==
        PaddedCopies::Both);
  CHECK(bench::prefers_warpgroup_mma(Precision::TF32, 4096, 4096, 4096));
  CHECK(bench::prefers_warpgroup_mma(Precision::BF16, 4096, 4096, 4096));
  // tf32 with few rows of A: the warp MMA, whose tiles need no copies
  // (bf16 keeps the warpgroup MMA there).
  CHECK_FALSE(bench::prefers_warpgroup_mma(Precision::TF32, 128, 4096, 16384));
  CHECK_FALSE(bench::prefers_warpgroup_mma(Precision::TF32, 16, 4096, 4096));
  CHECK(bench::prefers_warpgroup_mma(Precision::TF32, 129, 4096, 4096));
  CHECK(bench::prefers_warpgroup_mma(Precision::BF16, 16, 4096, 4096));
  // Rows the TMA cannot describe: the warpgroup MMA through padded copies.
  CHECK(bench::prefers_warpgroup_mma(Precision::F16, 4093, 4091, 4097));
  CHECK(bench::mma_tiling_for_shape(Precision::BF16, 4093, 4091, 4097, 132, true).tma_padded_copies ==
        PaddedCopies::Both);
  CHECK(bench::mma_tiling_for_shape(Precision::BF16, 4096, 4096, 4096, 132, true).tma_padded_copies ==
        PaddedCopies::None);
}

TEST_CASE("the GPU check's tensor-core kernels on the CPU: double reference at its tolerance, ragged, K = 1 / 3") {
  // The warp MMA's tilings of every precision, and tf32's warpgroup ones.
  std::vector<std::pair<Precision, MmaTiling>> in_use;
  for (Precision p : {Precision::TF32, Precision::BF16, Precision::F16})
    for (const MmaTiling &tiling : tilings_in_use(p))
      in_use.emplace_back(p, tiling);
  for (const MmaTiling &tiling : tilings_in_use(Precision::TF32, true))
    in_use.emplace_back(Precision::TF32, tiling);
  for (const auto &[p, tiling] : in_use) {
    {
      INFO(reference::precision_name(p), ": ", tiling.str());
      Gemm g = make_gemm(Epilogue::BiasGelu, bench::input_type(p), bench::output_type(p));
      schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
      Pipeline pipeline(g.out);
      for (auto [M, N, K] : std::vector<std::array<int, 3>>{{1, 1, 1}, {127, 129, 131}, {67, 45, 1}, {67, 45, 3}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        GemmData data = make_data(M, N, K, 1 + K, bench::input_type(p));
        for (size_t j = 0; j < data.bias.size(); ++j)
          data.bias.set(j, bench::bias_on_common_grid(data.bias.get(j)));
        Buffer out({M, N}, bench::output_type(p));
        out.poison();
        pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
        CHECK(count_nan(out) == 0);
        const double error = relative_error(out, double_reference(p, data, M, N, K));
        CHECK(error <= bench::tolerance(p, Comparison::OursVsDouble));
      }
      if (ptxas_available()) {
        PtxasResult assembled = pipeline.assemble(parse_gpu_target("sm_90a"));
        // With the TMA's copies of A and B, their kernels too.
        REQUIRE(assembled.kernels.size() == (tiling.uses_tma() ? 1u + copies_operand(tiling.tma_padded_copies, false) +
                                                                     copies_operand(tiling.tma_padded_copies, true)
                                                               : 1u));
        for (const KernelResources &kernel : assembled.kernels) {
          INFO(kernel.name);
          CHECK(kernel.spill_store_bytes == 0);
          CHECK(kernel.spill_load_bytes == 0);
        }
      }
    }
  }
}
