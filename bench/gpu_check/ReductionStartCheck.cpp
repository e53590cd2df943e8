#include "bench/gpu_check/ReductionStartCheck.h"

#include "bench/gpu_check/Report.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Gemm.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

void check_one(bench::Precision p, int start, int split_k, int M, int N, int K) {
  const Type type = bench::input_type(p);
  const std::string name = std::string("wgmma+tma reduction from column ") + std::to_string(start) +
                           (split_k > 1 ? " split " + std::to_string(split_k) : std::string()) + " " +
                           reference::precision_name(p);
  const std::string shape = std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  Outcome o;
  try {
    Param Mp("M"), Np("N"), Kp("K");
    Input A("A", type, {Mp, Kp}), B("B", type, {Kp, Np}), bias("bias", Float(32), {Np});
    Var i("i"), j("j");
    RDom k(start, Kp - start, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = cast(type, gelu(acc(i, j) + bias(j)));
    MmaTiling t = bench::mma_tiling(p, M, N, gpu::Device::get().sm_count(), true);
    t.split_k = split_k;
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
    o.detail = t.str();
    Pipeline pipeline(out);
    examples::GemmData data = examples::make_data(M, N, K, 3 + K, type);
    Buffer result({M, N}, type);
    result.poison();
    pipeline.realize_on_gpu({{"A", data.a}, {"B", data.b}, {"bias", data.bias}, {"M", M}, {"N", N}, {"K", K}},
                            result);
    // The inputs as the instruction multiplies them: tf32 rounds f32's.
    auto operand = [&](float v) { return double(p == bench::Precision::TF32 ? float_to_tf32(v) : v); };
    double diff = 0, norm = 0;
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        double sum = 0;
        for (int kk = start; kk < K; ++kk)
          sum += operand(data.a.at(r, kk)) * operand(data.b.at(kk, c));
        double want = gelu_erf(sum + data.bias.get(size_t(c)));
        double got = result.get(size_t(r) * N + c);
        if (!std::isfinite(got))
          ++o.not_finite;
        diff += (got - want) * (got - want);
        norm += want * want;
      }
    o.error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    o.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
  } catch (const std::exception &error) {
    o.failure = error.what();
  }
  record(name, shape, "double (all rows)", o);
}

} // namespace

void check_reduction_start(bench::Precision p) {
  if (!bench::has_warpgroup_mma(p) || target_for_current_device().sm() != "sm_90a")
    return;
  std::printf("\n== a reduction from a column past 0 on the TMA's copies, %s ==\n", reference::precision_name(p));
  const int start = 16 / bench::input_type(p).bytes(); // the first 16-byte multiple past 0
  for (int split : {1, 3}) {
    check_one(p, start, split, 131, 136, 200 + start);
    check_one(p, start, split, 67, 64, 1 + start);
    check_one(p, start, split, 67, 64, 3 + start);
  }
}

} // namespace coalesce::gpu_check
