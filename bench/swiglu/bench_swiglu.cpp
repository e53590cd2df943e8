// coalesce-bench-swiglu: a SwiGLU MLP's gate and up projections,
// y = bf16(silu(x Wg^T) * (x Wu^T)), x M x K and Wg, Wu N x K in bf16, as
// one kernel (examples/SwiGlu.h: both sums on one tile, each k step's tile
// of x feeding both sums' warpgroup MMAs, default_fused_gemms_tiling)
// against cuBLAS: one GEMM over the concatenated [Wg; Wu] alone (M x 2N,
// bf16 out, no activation: what the fused kernel must beat for the
// activation and the shared x to cost nothing), and the chain of two GEMMs
// and a silu * mul kernel. Wg and Wu are the two halves of one [Wg; Wu]
// buffer, so every variant reads the same memory. Each variant is checked
// first (its output poisoned, then 16 rows spread over it against a double
// reference on the host), then timed under the benchmark's protocol
// (runtime/GpuTiming.h: >= 300 ms warm-up, 30 to 200 runs between CUDA
// events, the L2 flushed before each, the median). Google Benchmark's flags
// pass through (--benchmark_out=swiglu.json).
// COALESCE_BENCH_SWIGLU_TILE_STORES=direct|shared|sums stores the fused
// kernel's tiles that way instead of the default's.

#include "bench/common/LayerBench.h"
#include "bench/reference/CublasReference.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/SwiGlu.h"
#include "runtime/GpuExecutable.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

using namespace coalesce;

namespace {

using Shape = bench::LayerShape;

enum class Variant { CublasConcatenated, CublasChain, CoalesceFused };
constexpr Variant kVariants[] = {Variant::CublasConcatenated, Variant::CublasChain, Variant::CoalesceFused};

const char *variant_name(Variant v) {
  switch (v) {
  case Variant::CublasConcatenated:
    return "cublas_gemm_over_wg_wu";
  case Variant::CublasChain:
    return "cublas_chain";
  case Variant::CoalesceFused:
    return "coalesce_swiglu_fused";
  }
  return "";
}

// One shape's data on the host and the device, and the compiled layer.
struct Problem {
  Shape s;
  Buffer x, W;                                                 // W = [Wg; Wu], 2N x K
  gpu::DeviceBuffer x_dev, W_dev, gu_dev, y_dev, g_dev, u_dev; // gu: M x 2N, the rest M x N
  MmaTiling tiling;
  std::unique_ptr<examples::SwiGlu> layer;
  std::unique_ptr<Pipeline> pipeline;
  /// The checked rows and their exact sums (over every row of W).
  std::optional<bench::SampledSums> exact;
  Problem(const Shape &shape, int sm_count) : s(shape), x({s.M, s.K}, BFloat(16)), W({2 * s.N, s.K}, BFloat(16)) {
    x.fill_random(41);
    W.fill_random(42);
    x_dev = bench::upload(x);
    W_dev = bench::upload(W);
    gu_dev = gpu::DeviceBuffer(size_t(s.M) * 2 * s.N * 2);
    y_dev = gpu::DeviceBuffer(size_t(s.M) * s.N * 2);
    g_dev = gpu::DeviceBuffer(size_t(s.M) * s.N * 2);
    u_dev = gpu::DeviceBuffer(size_t(s.M) * s.N * 2);
    tiling = default_fused_gemms_tiling(MmaKind::BF16_wgmma_m64k16, s.M, s.N, sm_count);
    // COALESCE_BENCH_SWIGLU_TILE_STORES=direct|shared|sums: how the fused
    // kernel stores its tiles, to compare with the default's.
    if (const char *stores = std::getenv("COALESCE_BENCH_SWIGLU_TILE_STORES"))
      for (TileStores t : kTileStores)
        if (std::string(stores) == tile_stores_name(t))
          tiling.tile_stores = t;
    layer = std::make_unique<examples::SwiGlu>(BFloat(16), BFloat(16));
    layer->schedule_mma(tiling);
    exact.emplace(x, W);
    pipeline = std::make_unique<Pipeline>(layer->y);
  }
};

bench::LayerBenchState<Problem> *g_bench = nullptr;

// ||got - want|| / ||want|| over the 16 rows: the M x 2N product for the
// GEMM over [Wg; Wu], else silu(g) * u (M x N).
double sampled_error(Problem &d, Variant v, size_t *not_finite) {
  const Shape &s = d.s;
  const int columns = v == Variant::CublasConcatenated ? 2 * s.N : s.N;
  Buffer out({s.M, columns}, BFloat(16));
  (v == Variant::CublasConcatenated ? d.gu_dev : d.y_dev).download(out.raw_data(), out.size_in_bytes());
  double error = 0, norm = 0;
  for (int n = 0; n < 16; ++n) {
    const double *sum = &d.exact->sums[size_t(n) * 2 * s.N];
    for (int c = 0; c < columns; ++c) {
      double want = v == Variant::CublasConcatenated ? sum[c] : sum[c] / (1.0 + std::exp(-sum[c])) * sum[s.N + c];
      double got = out.at(d.exact->rows[size_t(n)], c);
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
    const char *x = d.x_dev.as<char>(), *W = d.W_dev.as<char>();
    const char *Wu = W + size_t(s.N) * s.K * 2; // the second half of [Wg; Wu]
    void *gu = d.gu_dev.as<void>(), *out = d.y_dev.as<void>(), *g = d.g_dev.as<void>(), *u = d.u_dev.as<void>();
    using reference::Precision;
    std::function<void()> run;
    switch (v) {
    case Variant::CublasConcatenated:
      run = [=] { reference::gemm(Precision::BF16, s.M, 2 * s.N, s.K, x, W, gu, false, /*b_nk=*/true); };
      break;
    case Variant::CublasChain:
      run = [=] {
        reference::gemm(Precision::BF16, s.M, s.N, s.K, x, W, g, false, /*b_nk=*/true);
        reference::gemm(Precision::BF16, s.M, s.N, s.K, x, Wu, u, false, /*b_nk=*/true);
        reference::silu_mul(Precision::BF16, s.M, s.N, g, u, out);
      };
      break;
    case Variant::CoalesceFused: {
      const GpuExecutable &exe = d.pipeline->gpu_executable(target_for_current_device());
      std::map<std::string, CUdeviceptr> by_name{{"x", d.x_dev.ptr()},
                                                 {"Wg", d.W_dev.ptr()},
                                                 {"Wu", d.W_dev.ptr() + size_t(s.N) * s.K * 2},
                                                 {"y", d.y_dev.ptr()}};
      std::vector<CUdeviceptr> pointers;
      for (const Argument &arg : exe.program().args)
        pointers.push_back(by_name.count(arg.name) ? by_name[arg.name] : 0); // workspaces: the executable's own
      std::map<std::string, int64_t> params{{"M", s.M}, {"N", s.N}, {"K", s.K}};
      run = [&exe, pointers, params] { exe.launch(pointers, params); };
      break;
    }
    }
    // Checked, then timed; both products' flops for every variant.
    d.gu_dev.fill_bytes(0xFF);
    d.y_dev.fill_bytes(0xFF);
    std::optional<GpuTiming> t = bench::check_then_time(
        state, "coalesce-bench-swiglu", what, s, 4.0 * s.M * s.N * double(s.K), /*tolerance=*/4e-3, run,
        [&](size_t *not_finite) { return sampled_error(d, v, not_finite); }, g_bench->flush);
    if (!t)
      return;
    g_bench->record_time(state, s, v, v != Variant::CoalesceFused, t->median_ms, kVariants, variant_name);
    if (v == Variant::CoalesceFused)
      state.SetLabel(d.tiling.str());
  } catch (const std::exception &error) {
    std::string message = what + ": " + error.what();
    std::fprintf(stderr, "coalesce-bench-swiglu: ERROR: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  bench::LayerBenchState<Problem> bench;
  g_bench = &bench;
  bench::LayerBenchProgram program{
      "coalesce-bench-swiglu",
      "a SwiGLU MLP's gate and up projections fused in one kernel (bf16 warpgroup MMA) against cuBLAS's GEMM over "
      "[Wg; Wu] and its chain.\n",
      "4096x11008x4096,2048x28672x8192",
      "comma-separated MxNxK shapes (N and K multiples of 8)",
      8,
      8,
      "N and K multiples of 8 (16-byte rows, as cuBLAS's fast paths and the TMA read them; Wu starts N rows into "
      "[Wg; Wu])",
      "the fused kernel's warpgroup MMA"};
  return bench::layer_bench_main(
      argc, argv, program,
      [&](const std::vector<Shape> &shapes) {
        bench.flush = make_l2_flush_buffer();
        bench::register_layer_benchmarks("bf16", shapes, kVariants, variant_name, run_benchmark);
      },
      [&] { bench.problem.reset(); });
}
