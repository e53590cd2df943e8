// A GEMM + bias + exact GELU, out = gelu(A B + bias), with A stored K x M
// (column-major, read A(k, i)) and B stored K x N or N x K. Per precision
// (bf16 and f16, tf32) and path (the warp MMA, which reads 16-bit A's
// fragments with ldmatrix .trans, tf32's element by element; the warpgroup MMA with cp.async and with TMA
// copies: 16-bit A read MN-major with the instruction's transpose flag,
// tf32's A stored transposed by the compiler, through padded copies with
// the TMA), at whole and ragged shapes (rows of A that are not whole 16
// bytes take the kernel's cp.async fallback) and the K = 1 / K = 3 pair.
// Each against the same schedule reading A(i, k) from a transposed copy
// on the GPU (the same bits: the same products in the same order) and the
// double reference on 8 sampled rows.

#include "bench/gpu_check/MMajorCheck.h"

#include "bench/gpu_check/MmaPaths.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

const std::vector<Shape> kShapes = {{256, 256, 192}, {131, 264, 200}, {130, 136, 67}, {136, 72, 1}, {136, 72, 3}};
constexpr int kSampleRows = 8;

struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, B, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};
  Gemm(Precision p, MmaPath path, bool a_km, bool b_nk)
      : A("A", bench::input_type(p), a_km ? std::vector<Expr>{K, M} : std::vector<Expr>{M, K}),
        B("B", bench::input_type(p), b_nk ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N}) {
    acc(i, j) = 0.0f;
    acc(i, j) += (a_km ? A(k, i) : A(i, k)) * (b_nk ? B(j, k) : B(k, j));
    out(i, j) = cast(bench::output_type(p), gelu(acc(i, j) + bias(j)));
    MmaTiling t = mma_path_tiling(p, path);
    use_tma_copies_where_needed(t, -1, -1, -1);
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
  }
};

void check_one(Precision p, MmaPath path, bool b_nk, const Shape &s, const std::string &name) {
  Outcome o_ref, o_bits;
  const std::string what = name + (b_nk ? ", B N x K" : ", B K x N");
  try {
    Gemm km(p, path, true, b_nk), mk(p, path, false, b_nk);
    Type in = bench::input_type(p);
    Buffer a_km({s.K, s.M}, in), a_mk({s.M, s.K}, in),
        b(b_nk ? std::vector<int>{s.N, s.K} : std::vector<int>{s.K, s.N}, in), bias({s.N});
    a_km.fill_random(91);
    b.fill_random(92);
    bias.fill_random(93);
    if (p == Precision::TF32) {
      for (size_t e = 0; e < a_km.size(); ++e)
        a_km.set(e, float_to_tf32(a_km.get(e)));
      for (size_t e = 0; e < b.size(); ++e)
        b.set(e, float_to_tf32(b.get(e)));
    }
    for (int r = 0; r < s.M; ++r)
      for (int q = 0; q < s.K; ++q)
        a_mk.set(size_t(r) * s.K + q, a_km.get(size_t(q) * s.M + r));
    Buffer got({s.M, s.N}, bench::output_type(p)), want({s.M, s.N}, bench::output_type(p));
    got.poison();
    want.poison();
    Pipeline(km.out).realize_on_gpu({{"A", a_km}, {"B", b}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}}, got);
    Pipeline(mk.out).realize_on_gpu({{"A", a_mk}, {"B", b}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}}, want);
    size_t differ = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      o_ref.not_finite += std::isfinite(got.get(e)) ? 0 : 1;
      differ += got.get(e) == want.get(e) ? 0 : 1;
    }
    BiasGeluError reference;
    for (int r : sampled_rows(s.M, kSampleRows))
      reference.add_row(
          bias, s.N, s.K, [&](int q) { return double(a_mk.get(size_t(r) * s.K + q)); },
          [&](int q, int c) { return double(b_nk ? b.get(size_t(c) * s.K + q) : b.get(size_t(q) * s.N + c)); },
          [&](int c) { return double(got.get(size_t(r) * s.N + c)); });
    o_ref.error = reference.error();
    o_ref.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
    o_ref.detail = mma_path_name(path);
    record(what, s.str(), "double (" + std::to_string(kSampleRows) + " rows)", o_ref);
    o_bits.error = double(differ) / double(got.size());
    o_bits.tolerance = 0;
    o_bits.detail = std::to_string(differ) + " of " + std::to_string(got.size()) + " differ";
    record(what, s.str(), "A(i, k) from a transposed copy, bits", o_bits);
  } catch (const std::exception &error) {
    o_ref.failure = error.what();
    record(what, s.str(), "double", o_ref);
  }
}

} // namespace

void check_m_major_a(Precision p) {
  if (p == Precision::FP32)
    return;
  std::printf("\n==== %s: A stored K x M ====\n", reference::precision_name(p));
  for (MmaPath path : device_mma_paths())
    for (bool b_nk : {false, true})
      for (const Shape &s : kShapes)
        check_one(p, path, b_nk, s, std::string(reference::precision_name(p)) + " A K x M, " + mma_path_name(path));
}

void m_major_a_sanitizer_case() {
  for (MmaPath path : device_mma_paths())
    check_one(Precision::BF16, path, false, {131, 264, 200},
              std::string("bf16 A K x M (sanitizer), ") + mma_path_name(path));
}

} // namespace coalesce::gpu_check
