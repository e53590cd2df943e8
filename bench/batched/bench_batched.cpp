// coalesce-bench-batched: a batch of bf16 GEMMs, out[b] = bf16(gelu(A[b]
// B[b] + bias)), A batch x M x K and B batch x K x N, as one kernel
// (examples/BatchedGemm.h on the tensor-core schedule, the batch the grid's
// z) against cuBLAS's cublasGemmStridedBatchedEx of the same layout without
// an epilogue (what the fused kernel must match for the epilogue to cost
// nothing). Each variant is checked first (its output poisoned, then 16
// rows, spread over the batch's first, middle and last products, against a
// double reference on the host), then timed under the benchmark's protocol
// (runtime/GpuTiming.h: >= 300 ms warm-up, 30 to 200 runs between CUDA
// events, the L2 flushed before each, the median). Google Benchmark's flags pass through
// (--benchmark_out=batched.json). Ours runs twice: the default tiling (a
// block per tile), and the same tiles on a persistent grid of one block
// per multiprocessor whose producer warps run one pipeline across the
// block's tiles, the next tile's copies under this tile's epilogue.

#include "bench/common/LayerBench.h"
#include "bench/reference/CublasReference.h"
#include "examples/BatchedGemm.h"
#include "runtime/GpuExecutable.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

using namespace coalesce;

namespace {

using Shape = bench::LayerShape;

enum class Variant { CublasStridedBatched, CoalesceFused, CoalescePersistent };
constexpr Variant kVariants[] = {Variant::CublasStridedBatched, Variant::CoalesceFused, Variant::CoalescePersistent};

const char *variant_name(Variant v) {
  switch (v) {
  case Variant::CublasStridedBatched: return "cublas_gemm_strided_batched";
  case Variant::CoalesceFused: return "coalesce_batched_bias_gelu";
  case Variant::CoalescePersistent: return "coalesce_batched_persistent";
  }
  return "";
}

/// The default's tiles on a persistent grid of one block per
/// multiprocessor, fed by a producer warpgroup keeping 40 registers whose
/// pipeline runs across the block's tiles (four stages: the output's tile
/// is stored directly, as for single products on such a grid).
MmaTiling persistent_tiling(MmaTiling t, int sm_count) {
  t.persistent_blocks = sm_count;
  t.producer_warps = 4;
  t.producer_registers = 40;
  t.min_blocks_per_sm = 1;
  t.stages = 4;
  t.tile_stores = TileStores::Direct;
  return t;
}

/// One kernel of ours: its schedule, or why the library refused it.
struct Compiled {
  MmaTiling tiling;
  std::unique_ptr<examples::BatchedGemm> gemm;
  std::unique_ptr<Pipeline> pipeline;
  std::string refused;

  explicit Compiled(const MmaTiling &t) : tiling(t) {
    gemm = std::make_unique<examples::BatchedGemm>(BFloat(16), BFloat(16), examples::BatchedOperands::Both);
    gemm->schedule_mma(tiling);
    pipeline = std::make_unique<Pipeline>(gemm->out);
    try {
      pipeline->gpu_executable(target_for_current_device());
    } catch (const UserError &error) {
      refused = error.what();
    }
  }
};

constexpr int kCheckedRows = 16;

// One shape's data on the host and the device, and the compiled batch.
struct Problem {
  Shape s;
  Buffer a, b, bias;
  gpu::DeviceBuffer a_dev, b_dev, bias_dev, out_dev;
  std::unique_ptr<Compiled> fused, persistent;
  // The checked (product, row) pairs and their exact sums over every column.
  std::vector<std::pair<int, int>> rows;
  std::vector<double> sums;

  Problem(const Shape &shape, int sm_count)
      : s(shape), a({s.batch, s.M, s.K}, BFloat(16)), b({s.batch, s.K, s.N}, BFloat(16)), bias({s.N}) {
    a.fill_random(51);
    b.fill_random(52);
    bias.fill_random(53);
    a_dev = bench::upload(a);
    b_dev = bench::upload(b);
    bias_dev = bench::upload(bias);
    out_dev = gpu::DeviceBuffer(size_t(s.batch) * s.M * s.N * 2);
    MmaTiling tiling = default_batched_mma_tiling(MmaKind::BF16_wgmma_m64k16, s.batch, s.M, s.N, s.K, sm_count);
    fused = std::make_unique<Compiled>(tiling);
    persistent = std::make_unique<Compiled>(persistent_tiling(tiling, sm_count));
    const int products[3] = {0, s.batch / 2, s.batch - 1};
    for (int n = 0; n < kCheckedRows; ++n)
      rows.push_back({products[n * 3 / kCheckedRows], int(int64_t(n % 6) * (s.M - 1) / 5)});
    sums.assign(rows.size() * size_t(s.N), 0.0);
    for (size_t n = 0; n < rows.size(); ++n) {
      auto [z, r] = rows[n];
      for (int k = 0; k < s.K; ++k) {
        double x = a.get((size_t(z) * s.M + r) * s.K + k);
        for (int c = 0; c < s.N; ++c)
          sums[n * s.N + c] += x * b.get((size_t(z) * s.K + k) * s.N + c);
      }
    }
  }
};

bench::LayerBenchState<Problem> *g_bench = nullptr;

// ||got - want|| / ||want|| over the checked rows: the product for cuBLAS,
// gelu(product + bias) for ours.
double sampled_error(Problem &d, Variant v, size_t *not_finite) {
  const Shape &s = d.s;
  Buffer out({s.batch, s.M, s.N}, BFloat(16));
  d.out_dev.download(out.raw_data(), out.size_in_bytes());
  double error = 0, norm = 0;
  for (size_t n = 0; n < d.rows.size(); ++n) {
    auto [z, r] = d.rows[n];
    for (int c = 0; c < s.N; ++c) {
      double sum = d.sums[n * s.N + c];
      if (v != Variant::CublasStridedBatched) {
        sum += d.bias.get(size_t(c));
        sum = 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0)));
      }
      double got = out.get((size_t(z) * s.M + r) * s.N + c);
      if (!std::isfinite(got)) {
        ++*not_finite;
        continue;
      }
      error += (got - sum) * (got - sum);
      norm += sum * sum;
    }
  }
  return std::sqrt(error / std::max(norm, 1e-30));
}

void run_benchmark(benchmark::State &state, Shape s, Variant v) {
  const std::string what = std::string(variant_name(v)) + " " + s.name();
  try {
    Problem &d = g_bench->problem_for(s);
    std::function<void()> run;
    switch (v) {
    case Variant::CublasStridedBatched: {
      const void *A = d.a_dev.as<void>(), *B = d.b_dev.as<void>();
      void *C = d.out_dev.as<void>();
      run = [=] {
        reference::gemm_strided_batched(reference::Precision::BF16, s.batch, s.M, s.N, s.K, A, int64_t(s.M) * s.K,
                                        B, int64_t(s.K) * s.N, C);
      };
      break;
    }
    case Variant::CoalesceFused:
    case Variant::CoalescePersistent: {
      const Compiled &ours = v == Variant::CoalesceFused ? *d.fused : *d.persistent;
      if (!ours.refused.empty()) {
        state.SkipWithError((what + ": " + ours.refused).c_str());
        return;
      }
      const GpuExecutable &exe = ours.pipeline->gpu_executable(target_for_current_device());
      std::map<std::string, CUdeviceptr> by_name{
          {"A", d.a_dev.ptr()}, {"B", d.b_dev.ptr()}, {"bias", d.bias_dev.ptr()}, {"out", d.out_dev.ptr()}};
      std::vector<CUdeviceptr> pointers;
      for (const Argument &arg : exe.program().args)
        pointers.push_back(by_name.count(arg.name) ? by_name[arg.name] : 0); // workspaces: the executable's own
      std::map<std::string, int64_t> params{{"Batch", s.batch}, {"M", s.M}, {"N", s.N}, {"K", s.K}};
      run = [&exe, pointers, params] { exe.launch(pointers, params); };
      break;
    }
    }
    d.out_dev.fill_bytes(0xFF);
    std::optional<GpuTiming> t = bench::check_then_time(
        state, "coalesce-bench-batched", what, s, 2.0 * s.batch * s.M * s.N * double(s.K), /*tolerance=*/4e-3, run,
        [&](size_t *not_finite) { return sampled_error(d, v, not_finite); }, g_bench->flush);
    if (!t)
      return;
    const bool ours = v != Variant::CublasStridedBatched;
    g_bench->record_time(state, s, v, !ours, t->median_ms, kVariants, variant_name);
    if (ours)
      state.SetLabel((v == Variant::CoalesceFused ? d.fused : d.persistent)->tiling.str());
  } catch (const std::exception &error) {
    std::string message = what + ": " + error.what();
    std::fprintf(stderr, "coalesce-bench-batched: ERROR: %s\n", message.c_str());
    state.SkipWithError(message.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  bench::LayerBenchState<Problem> bench;
  g_bench = &bench;
  bench::LayerBenchProgram program{
      "coalesce-bench-batched",
      "a batch of bf16 GEMMs + bias + GELU in one kernel (the warpgroup MMA, the batch the grid's z) against "
      "cublasGemmStridedBatchedEx.\n",
      "16x2048x2048x2048,64x512x512x512,8x4096x4096x1024",
      "comma-separated BxMxNxK shapes (N and K multiples of 8)",
      8,
      8,
      "N and K multiples of 8 (16-byte rows, as cuBLAS's fast paths and the TMA read them)",
      "the batch's warpgroup MMA",
      /*batched=*/true};
  return bench::layer_bench_main(
      argc, argv, program,
      [&](const std::vector<Shape> &shapes) {
        bench.flush = make_l2_flush_buffer();
        bench::register_layer_benchmarks("bf16", shapes, kVariants, variant_name, run_benchmark);
      },
      [&] { bench.problem.reset(); });
}
