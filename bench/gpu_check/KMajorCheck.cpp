#include "bench/gpu_check/KMajorCheck.h"

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

/// How the schedule copies its tiles.
enum class Copies { WarpMma, WarpgroupTma, WarpgroupAsync, WarpgroupPadded };

const char *copies_name(Copies c) {
  switch (c) {
  case Copies::WarpMma:
    return "mma";
  case Copies::WarpgroupTma:
    return "wgmma+tma";
  case Copies::WarpgroupAsync:
    return "wgmma";
  case Copies::WarpgroupPadded:
    return "wgmma+tma+padded";
  }
  return "";
}

// The tiling of swap-AB (MmaTiling::swap_ab): the tile's rows along N, W's
// rows the instruction's M; `columns` of A's rows per warpgroup (64, or
// as few as 8), 32 per warp.
void swap_rows_and_columns(MmaTiling &t, int columns) {
  const bool group = is_warpgroup_mma(t.kind);
  t.swap_ab = true;
  t.block_m = group ? columns : 64;
  t.block_n = 128;
  t.warp_m = group ? 64 : 32;
  t.warp_n = group ? columns : 32;
  t.split_k = 1;
  t.tile_stores = TileStores::Direct;
}

// The schedule compiled once, run at each shape.
// `swap_columns`: 0, the tile's rows along M; else swap-AB with that many
// columns per warpgroup. `w_stored_n_by_k` false: B stored K x N instead
// (under swap-AB, the instruction's first operand MN-major).
void check_copies(bench::Precision p, Copies copies, const std::vector<Shape> &shapes, int swap_columns = 0,
                  bool w_stored_n_by_k = true) {
  const Type type = bench::input_type(p);
  const std::string name =
      std::string(copies_name(copies)) +
      (swap_columns ? " swap-AB (" + std::to_string(swap_columns) + " rows of A per instruction tile)" : "") +
      (w_stored_n_by_k ? " W(j, k) (B stored N x K) " : " B(k, j) (B stored K x N) ") + reference::precision_name(p);
  std::optional<Pipeline> pipeline;
  std::string detail, failure;
  try {
    Param Mp("M"), Np("N"), Kp("K");
    Input A("A", type, {Mp, Kp}), bias("bias", Float(32), {Np});
    Input W = w_stored_n_by_k ? Input("W", type, {Np, Kp}) : Input("W", type, {Kp, Np});
    Var i("i"), j("j");
    RDom k(0, Kp, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * (w_stored_n_by_k ? W(j, k) : W(k, j));
    out(i, j) = cast(type, gelu(acc(i, j) + bias(j)));
    bool warpgroup = copies != Copies::WarpMma;
    MmaTiling t = bench::mma_tiling(p, 4096, 4096, gpu::Device::get().sm_count(), warpgroup);
    if (warpgroup) {
      t.tma = copies != Copies::WarpgroupAsync;
      t.tma_padded_copies =
          (copies == Copies::WarpgroupPadded || p == bench::Precision::TF32) ? PaddedCopies::Both : PaddedCopies::None;
    }
    if (swap_columns)
      swap_rows_and_columns(t, swap_columns);
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
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
        // B as make_data draws it (K x N), stored transposed as W (or as it is).
        examples::GemmData data = examples::make_data(M, N, K, 5 + K, type);
        Buffer w = w_stored_n_by_k ? Buffer({N, K}, type) : data.b;
        if (w_stored_n_by_k)
          for (int r = 0; r < K; ++r)
            for (int c = 0; c < N; ++c)
              w.set(c, r, data.b.at(r, c));
        Buffer result({M, N}, type);
        result.poison();
        pipeline->realize_on_gpu({{"A", data.a}, {"W", w}, {"bias", data.bias}, {"M", M}, {"N", N}, {"K", K}},
                                 result);
        auto operand = [&](float v) { return double(p == bench::Precision::TF32 ? float_to_tf32(v) : v); };
        Buffer want({M, N}), got({M, N});
        for (int r = 0; r < M; ++r)
          for (int c = 0; c < N; ++c) {
            double sum = 0;
            for (int kk = 0; kk < K; ++kk)
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

void check_k_major_b(bench::Precision p) {
  if (p == bench::Precision::FP32)
    return;
  std::printf("\n== B stored N x K (nn.Linear's weight), %s ==\n", reference::precision_name(p));
  // Ragged everywhere (K not a multiple of the k step), and the K = 1 / 3 pair.
  const std::vector<Shape> ragged = {{131, 133, 67}, {67, 45, 1}, {67, 45, 3}, {1000, 1000, 1000}};
  // Rows the TMA can describe (K a multiple of 8), ragged edges.
  const std::vector<Shape> tma = {{131, 136, 200}, {67, 64, 8}, {1000, 1048, 1000}, {300, 520, 4104}};
  // Swap-AB where M is a few rows, as in a decode step, and where it is not.
  const std::vector<Shape> few_rows = {{1, 1000, 1000}, {5, 133, 67}, {5, 45, 1}, {5, 45, 3}, {131, 133, 67}};
  const std::vector<Shape> few_rows_tma = {{1, 1048, 1000}, {16, 136, 200}, {131, 136, 200}};
  const bool sixteen_bits = p != bench::Precision::TF32;
  check_copies(p, Copies::WarpMma, ragged);
  if (sixteen_bits)
    check_copies(p, Copies::WarpMma, few_rows, 32);
  if (!bench::has_warpgroup_mma(p) || !target_for_current_device().has_warpgroup_mma())
    return;
  if (sixteen_bits) {
    check_copies(p, Copies::WarpgroupTma, tma);
    check_copies(p, Copies::WarpgroupAsync, ragged);
    check_copies(p, Copies::WarpgroupTma, few_rows_tma, 64);
    check_copies(p, Copies::WarpgroupAsync, few_rows, 64);
    check_copies(p, Copies::WarpgroupPadded, few_rows, 64);
    // Decode's narrow tiles: 16 and 8 rows of A per warpgroup.
    check_copies(p, Copies::WarpgroupTma, few_rows_tma, 16);
    check_copies(p, Copies::WarpgroupAsync, few_rows, 8);
    check_copies(p, Copies::WarpgroupPadded, few_rows, 24);
    // B stored K x N under swap-AB: the first operand MN-major.
    const std::vector<Shape> few_rows_tma_kn = {
        {1, 1048, 1000}, {16, 136, 200}, {131, 136, 200}, {5, 136, 1}, {5, 136, 3}};
    check_copies(p, Copies::WarpgroupTma, few_rows_tma_kn, 64, false);
    check_copies(p, Copies::WarpgroupTma, few_rows_tma_kn, 16, false);
    check_copies(p, Copies::WarpgroupAsync, few_rows, 8, false);
    check_copies(p, Copies::WarpgroupPadded, few_rows, 24, false);
  }
  check_copies(p, Copies::WarpgroupPadded, ragged);
}

void k_major_b_sanitizer_case() {
  // realize_on_gpu allocates each buffer at exactly its size.
  const Shape ragged = {131, 133, 67}, tma = {131, 136, 200};
  check_copies(bench::Precision::BF16, Copies::WarpMma, {ragged});
  if (!target_for_current_device().has_warpgroup_mma())
    return;
  check_copies(bench::Precision::BF16, Copies::WarpgroupTma, {tma});
  check_copies(bench::Precision::BF16, Copies::WarpgroupAsync, {ragged});
  check_copies(bench::Precision::BF16, Copies::WarpgroupPadded, {ragged});
  check_copies(bench::Precision::TF32, Copies::WarpgroupPadded, {ragged});
  check_copies(bench::Precision::BF16, Copies::WarpMma, {{5, 133, 67}}, 32);
  check_copies(bench::Precision::BF16, Copies::WarpgroupTma, {{5, 136, 200}}, 64);
  check_copies(bench::Precision::BF16, Copies::WarpgroupTma, {{5, 136, 200}}, 16);
  check_copies(bench::Precision::BF16, Copies::WarpgroupAsync, {{5, 133, 67}}, 8);
  check_copies(bench::Precision::BF16, Copies::WarpgroupTma, {{5, 136, 200}}, 16, false);
  check_copies(bench::Precision::BF16, Copies::WarpgroupAsync, {{5, 133, 67}}, 64, false);
}

} // namespace coalesce::gpu_check
