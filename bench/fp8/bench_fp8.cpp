// coalesce-bench-fp8: the FP8 linear layer, out = bf16(gelu(acc(i, j) *
// a_scale(i) * w_scale(j) + bias(j))) with acc(i, j) = sum_k A(i, k) W(j, k)
// over e4m3 A (M x K) and W (N x K), on Hopper's e4m3 warpgroup MMA
// (default_mma_tiling), against cuBLASLt's e4m3 GEMM of the same layout
// with a bf16 output and no epilogue: tensor-wise and row-wise scales, with
// and without its fast accumulation. Every variant is checked first (its
// output poisoned, then 16 rows spread over it against a double reference
// on the host), then timed under the benchmark's protocol (runtime/
// GpuTiming.h: >= 300 ms warm-up, 30 to 200 runs between CUDA events, the
// L2 flushed before each, the median). Google Benchmark's flags pass
// through (--benchmark_out=fp8.json).

#include "bench/common/LayerBench.h"
#include "bench/reference/CublasFp8.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Fp8Linear.h"
#include "runtime/GpuExecutable.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

using namespace coalesce;

namespace {

using Shape = bench::LayerShape;

enum class Variant { CublasTensor, CublasTensorFast, CublasRow, CublasRowFast, CoalesceFused };
constexpr Variant kVariants[] = {Variant::CublasTensor, Variant::CublasTensorFast, Variant::CublasRow,
                                 Variant::CublasRowFast, Variant::CoalesceFused};

const char *variant_name(Variant v) {
  switch (v) {
  case Variant::CublasTensor:
    return "cublaslt_fp8_tensor_scales";
  case Variant::CublasTensorFast:
    return "cublaslt_fp8_tensor_scales_fast_accum";
  case Variant::CublasRow:
    return "cublaslt_fp8_row_scales";
  case Variant::CublasRowFast:
    return "cublaslt_fp8_row_scales_fast_accum";
  case Variant::CoalesceFused:
    return "coalesce_fp8_fused";
  }
  return "";
}

// The layer (examples/Fp8Linear.h) with the library's tiling for the shape.
// COALESCE_BENCH_TILE_STORES=shared or sums stages the output's values or
// its sums (the epilogue in the copy-out) whatever the tiling chose, to
// compare.
struct Layer : examples::Fp8Linear {
  MmaTiling tiling;
  Layer(const Shape &s, int sm_count) : Fp8Linear(Float8E4M3(), Float8E4M3()) {
    tiling = default_mma_tiling(MmaKind::E4M3_wgmma_m64k32, s.M, s.N, s.K, sm_count, false, /*b_nk=*/true);
    const char *stores = std::getenv("COALESCE_BENCH_TILE_STORES");
    if (stores && std::string(stores) == "sums")
      tiling.tile_stores = TileStores::SumsThroughShared;
    else if (stores && std::string(stores) == "shared")
      tiling.tile_stores = TileStores::ThroughShared;
    schedule_mma(tiling);
  }
};

// Where W's tensor-wise scale sits in the scales' buffer (16 bytes in).
constexpr int kTensorScaleW = 4;

// One shape's data on the host and the device, and the compiled layer.
struct Problem {
  Shape s;
  Buffer A, W, a_scale, w_scale, bias, tensor_scales;
  gpu::DeviceBuffer A_dev, W_dev, a_scale_dev, w_scale_dev, bias_dev, tensor_scales_dev, out_dev;
  std::unique_ptr<Layer> layer;
  std::unique_ptr<Pipeline> pipeline;
  /// The checked rows and their exact sums (over every row of W).
  std::optional<bench::SampledSums> exact;
  Problem(const Shape &shape, int sm_count)
      : s(shape), A({s.M, s.K}, Float8E4M3()), W({s.N, s.K}, Float8E4M3()), a_scale({s.M}), w_scale({s.N}), bias({s.N}),
        tensor_scales({8}) {
    A.fill_random(31);
    W.fill_random(32);
    bias.fill_random(33);
    for (int r = 0; r < s.M; ++r)
      a_scale.set(size_t(r), 0.5f + 0.01f * float(r % 7));
    for (int c = 0; c < s.N; ++c)
      w_scale.set(size_t(c), 2.0f - 0.02f * float(c % 5));
    // A's scale at 0, W's at 4: cuBLASLt wants each scale pointer 16-byte
    // aligned (it answers NOT_SUPPORTED otherwise).
    tensor_scales.set(0, 0.5f);
    tensor_scales.set(kTensorScaleW, 2.0f);
    A_dev = bench::upload(A);
    W_dev = bench::upload(W);
    a_scale_dev = bench::upload(a_scale);
    w_scale_dev = bench::upload(w_scale);
    bias_dev = bench::upload(bias);
    tensor_scales_dev = bench::upload(tensor_scales);
    out_dev = gpu::DeviceBuffer(size_t(s.M) * s.N * 2);
    layer = std::make_unique<Layer>(s, sm_count);
    exact.emplace(A, W);
    pipeline = std::make_unique<Pipeline>(layer->out);
  }
};

bench::LayerBenchState<Problem> *g_bench = nullptr;

// ||got - want|| / ||want|| over 16 rows spread over the output; `fused`:
// the layer's epilogue, else cuBLASLt's scaled product.
double sampled_error(Problem &d, Variant v, size_t *not_finite) {
  const Shape &s = d.s;
  Buffer out({s.M, s.N}, BFloat(16));
  d.out_dev.download(out.raw_data(), out.size_in_bytes());
  bool row = v == Variant::CublasRow || v == Variant::CublasRowFast || v == Variant::CoalesceFused;
  double error = 0, norm = 0;
  for (int n = 0; n < 16; ++n) {
    int r = d.exact->rows[size_t(n)];
    for (int c = 0; c < s.N; ++c) {
      double sum = d.exact->sums[size_t(n) * s.N + c];
      double scale = row ? double(d.a_scale.get(size_t(r))) * d.w_scale.get(size_t(c))
                         : double(d.tensor_scales.get(0)) * d.tensor_scales.get(kTensorScaleW);
      double want = sum * scale;
      if (v == Variant::CoalesceFused) {
        want += d.bias.get(size_t(c));
        want = 0.5 * want * (1.0 + std::erf(want / std::sqrt(2.0)));
      }
      double got = out.at(r, c);
      if (!std::isfinite(got)) {
        ++*not_finite;
        continue;
      }
      error += (got - want) * (got - want);
      norm += want * want;
    }
  }
  return std::sqrt(error / std::max(norm, 1e-30));
}

void run_benchmark(benchmark::State &state, Shape s, Variant v) {
  const std::string what = std::string(variant_name(v)) + " " + s.name();
  try {
    Problem &d = g_bench->problem_for(s);
    const void *A = d.A_dev.as<void>(), *W = d.W_dev.as<void>();
    void *out = d.out_dev.as<void>();
    const float *tensor_a = d.tensor_scales_dev.as<float>(), *tensor_w = tensor_a + kTensorScaleW;
    const float *row_a = d.a_scale_dev.as<float>(), *row_w = d.w_scale_dev.as<float>();
    std::function<void()> run;
    using reference::Fp8Scales;
    switch (v) {
    case Variant::CublasTensor:
    case Variant::CublasTensorFast:
      run = [=] {
        reference::lt_fp8_gemm(Fp8Scales::Tensor, v == Variant::CublasTensorFast, s.M, s.N, s.K, A, W, tensor_a,
                               tensor_w, out);
      };
      break;
    case Variant::CublasRow:
    case Variant::CublasRowFast:
      run = [=] {
        reference::lt_fp8_gemm(Fp8Scales::Row, v == Variant::CublasRowFast, s.M, s.N, s.K, A, W, row_a, row_w, out);
      };
      break;
    case Variant::CoalesceFused: {
      const GpuExecutable &exe = d.pipeline->gpu_executable(target_for_current_device());
      std::map<std::string, CUdeviceptr> by_name{{"A", d.A_dev.ptr()},
                                                 {"W", d.W_dev.ptr()},
                                                 {"a_scale", d.a_scale_dev.ptr()},
                                                 {"w_scale", d.w_scale_dev.ptr()},
                                                 {"bias", d.bias_dev.ptr()},
                                                 {"out", d.out_dev.ptr()}};
      std::vector<CUdeviceptr> pointers;
      for (const Argument &arg : exe.program().args)
        pointers.push_back(by_name.count(arg.name) ? by_name[arg.name] : 0); // workspaces: the executable's own
      std::map<std::string, int64_t> params{{"M", s.M}, {"N", s.N}, {"K", s.K}};
      run = [&exe, pointers, params] { exe.launch(pointers, params); };
      break;
    }
    }
    // Checked, then timed.
    d.out_dev.fill_bytes(0xFF);
    std::optional<GpuTiming> t = bench::check_then_time(
        state, "coalesce-bench-fp8", what, s, 2.0 * s.M * s.N * double(s.K),
        /*tolerance=*/4e-3, // the bf16 output's rounding, twice (2^-8)
        run, [&](size_t *not_finite) { return sampled_error(d, v, not_finite); }, g_bench->flush);
    if (!t)
      return;
    g_bench->record_time(state, s, v, v != Variant::CoalesceFused, t->median_ms, kVariants, variant_name);
    if (v == Variant::CoalesceFused)
      state.SetLabel(d.layer->tiling.str());
  } catch (const std::exception &error) {
    std::string message = what + ": " + error.what();
    std::fprintf(stderr, "coalesce-bench-fp8: ERROR: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  bench::LayerBenchState<Problem> bench;
  g_bench = &bench;
  bench::LayerBenchProgram program{"coalesce-bench-fp8",
                                   "the FP8 linear layer (e4m3 warpgroup MMA, scales, bias, GELU) against cuBLASLt's "
                                   "FP8 GEMM.\n",
                                   "4096x4096x4096,8192x8192x8192,8192x11008x4096",
                                   "comma-separated MxNxK shapes (K a multiple of 16)",
                                   1,
                                   16,
                                   "K a multiple of 16 (the TMA's rows)",
                                   "the e4m3 warpgroup MMA"};
  return bench::layer_bench_main(
      argc, argv, program,
      [&](const std::vector<Shape> &shapes) {
        bench.flush = make_l2_flush_buffer();
        bench::register_layer_benchmarks("e4m3", shapes, kVariants, variant_name, run_benchmark);
      },
      [&] { bench.problem.reset(); });
}
