#include "bench/gpu_check/ReductionStartCheck.h"

#include "bench/gpu_check/Report.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
};

// The schedule compiled once, run at each shape: its tiling is the one
// bench::mma_tiling picks for the first (largest) shape.
void check_start(bench::Precision p, int start, int split_k, const std::vector<Shape> &shapes) {
  const Type type = bench::input_type(p);
  const std::string name = std::string("wgmma+tma reduction from column ") + std::to_string(start) +
                           (split_k > 1 ? " split " + std::to_string(split_k) : std::string()) + " " +
                           reference::precision_name(p);
  std::optional<Pipeline> pipeline;
  std::string detail, failure;
  try {
    Param Mp("M"), Np("N"), Kp("K");
    Input A("A", type, {Mp, Kp}), B("B", type, {Kp, Np}), bias("bias", Float(32), {Np});
    Var i("i"), j("j");
    RDom k(start, Kp - start, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = cast(type, gelu(acc(i, j) + bias(j)));
    MmaTiling t = bench::mma_tiling(p, shapes.front().M, shapes.front().N, gpu::Device::get().sm_count(), true);
    t.split_k = split_k;
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
    detail = t.str();
    pipeline.emplace(out);
  } catch (const std::exception &error) {
    failure = error.what();
  }
  for (const auto &[M, N, K] : shapes) {
    const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    Outcome o;
    o.detail = detail;
    o.failure = failure;
    if (pipeline) {
      try {
        examples::GemmData data = examples::make_data(M, N, K, 3 + K, type);
        Buffer result({M, N}, type);
        result.poison();
        pipeline->realize_on_gpu(
            {{"A", data.a}, {"B", data.b}, {"bias", data.bias}, {"M", M}, {"N", N}, {"K", K}}, result);
        // The sum from `start` in double, of the inputs as the instruction
        // multiplies them (tf32 rounds f32's).
        auto operand = [&](float v) { return double(p == bench::Precision::TF32 ? float_to_tf32(v) : v); };
        Buffer want({M, N}), got({M, N});
        for (int r = 0; r < M; ++r)
          for (int c = 0; c < N; ++c) {
            double sum = 0;
            for (int kk = start; kk < K; ++kk)
              sum += operand(data.a.at(r, kk)) * operand(data.b.at(kk, c));
            want(r, c) = float(examples::reference_epilogue<double>(examples::Epilogue::BiasGelu, sum,
                                                                    data.bias.get(size_t(c))));
            got(r, c) = result.at(r, c);
          }
        o.not_finite = examples::count_nan(got);
        o.error = examples::relative_error(got, want);
        o.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, shape, "double (all rows)", o);
  }
}

} // namespace

void check_reduction_start(bench::Precision p) {
  if (!bench::has_warpgroup_mma(p) || !target_for_current_device().has_warpgroup_mma())
    return;
  std::printf("\n== a reduction from a column past 0 on the TMA's copies, %s ==\n", reference::precision_name(p));
  const int start = 16 / bench::input_type(p).bytes(); // the first 16-byte multiple past 0
  for (int split : {1, 3})
    check_start(p, start, split, {{131, 136, 200 + start}, {67, 64, 1 + start}, {67, 64, 3 + start}});
}

} // namespace coalesce::gpu_check
