#pragma once
// The FP8 linear layer as the tests, the GPU check, the FP8 benchmark and
// coalesce-aot's gemm (--dtype=e4m3|e5m2) write it (lesson 10 spells the
// same algorithm out):
//
//   acc(i, j) = sum over k of A(i, k) * W(j, k)        A: M x K, W: N x K, 8-bit floats
//   out(i, j) = bf16(gelu(acc(i, j) * a_scale(i) * w_scale(j) + bias(j)))
//
// a_scale per row of A, w_scale per row of W (output channel), bias per
// column, all f32; the products of the widened 8-bit values are exact in
// f32 and summed in f32. The scales apply to the whole sum, before the bias
// and the activation. Fp8LinearForm varies the epilogue (scales per tensor
// or none, no bias, another activation or output type) and the names and
// sizes, for coalesce-aot; its defaults are the layer above. Two schedules:
// the warpgroup MMA's (schedule_gemm_mma with a tiling for an 8-bit kind)
// and a small FFMA one.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace coalesce::examples {

/// What multiplies the f32 sum: nothing; one f32 per tensor (one-element
/// inputs a_scale[1] and w_scale[1], read at 0, as cuBLASLt's scale
/// pointers); or a_scale[M] per row of A and w_scale[N] per row of W.
enum class Fp8Scales { None, Tensor, Row };

/// The layer's epilogue, names and sizes; the defaults are the layer above.
struct Fp8LinearForm {
  Expr M, N, K; ///< the sizes (constants, say); undefined: Params named "M", "N", "K"
  std::string a_name = "A", w_name = "W", a_scale_name = "a_scale", w_scale_name = "w_scale";
  Fp8Scales scales = Fp8Scales::Row;
  bool bias = true;
  std::string activation = "gelu"; ///< a name dsl/Activations.h's activation() takes ("identity": none)
  Type out_type = BFloat(16);
};

struct Fp8Linear {
  Expr M, N, K;
  Input A, W, a_scale, w_scale, bias;
  Var i{"i"}, j{"j"};
  RDom k;
  Func acc{"acc"}, out{"out"};

  /// The algorithm, A of type `a` and W of type `w` (e4m3 or e5m2), unscheduled.
  Fp8Linear(Type a, Type w, const Fp8LinearForm &form = {})
      : M(size(form.M, "M")), N(size(form.N, "N")), K(size(form.K, "K")), A(form.a_name, a, {M, K}),
        W(form.w_name, w, {N, K}), a_scale(form.a_scale_name, Float(32), {per_tensor(form) ? Expr(1) : M}),
        w_scale(form.w_scale_name, Float(32), {per_tensor(form) ? Expr(1) : N}), bias("bias", Float(32), {N}),
        k(0, K, "k") {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * W(j, k);
    Expr sum = acc(i, j);
    if (form.scales == Fp8Scales::Row)
      sum = sum * a_scale(i) * w_scale(j);
    else if (form.scales == Fp8Scales::Tensor)
      sum = sum * a_scale(0) * w_scale(0);
    if (form.bias)
      sum = sum + bias(j);
    out(i, j) = cast(form.out_type, activation(form.activation, sum));
  }

  /// The tensor-core schedule (an 8-bit warpgroup kind in `t`).
  Fp8Linear &schedule_mma(const MmaTiling &t) {
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
    return *this;
  }

  /// 32 x 32 tiles of 16 x 16 threads holding 2 x 2 sums, K in steps of 8
  /// with both inputs staged in shared memory (1-byte elements there too),
  /// by `copies` (one buffer, or a cp.async pipeline).
  Fp8Linear &schedule_ffma(const TileCopies &copies = OneBuffer{}) {
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    RVar ko("ko"), ki("ki");
    out.tile(i, j, bi, bj, ii, jj, 32, 32)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update()
        .split(k, ko, ki, 8)
        .reorder({ko, ti, tj, ki, ri, rj})
        .unroll(ki)
        .stage_in_shared(A, ko, SharedLayout{}, copies)
        .stage_in_shared(W, ko, SharedLayout{}, copies);
    return *this;
  }

private:
  static Expr size(const Expr &given, const char *name) { return given.defined() ? given : Expr(Param(name)); }
  static bool per_tensor(const Fp8LinearForm &form) { return form.scales == Fp8Scales::Tensor; }
};

/// The layer's inputs at M x N x K (fixed seeds; A and W uniform in
/// [-1, 1), a_scale about 0.5 per row, w_scale about 2 per channel), `run`
/// on them into a poisoned bf16 output (a Pipeline's realize_on_cpu or
/// realize_on_gpu), then ||out - reference|| / ||reference|| against the
/// double reference on every element; infinity if one is not finite.
inline double fp8_linear_error(Type a, Type w, int M, int N, int K,
                               const std::function<void(const Arguments &, Buffer &)> &run) {
  Buffer A({M, K}, a), W({N, K}, w), a_scale({M}), w_scale({N}), bias({N}), out({M, N}, BFloat(16));
  A.fill_random(11);
  W.fill_random(12);
  bias.fill_random(13);
  for (int r = 0; r < M; ++r)
    a_scale.set(size_t(r), 0.5f + 0.01f * float(r % 7));
  for (int c = 0; c < N; ++c)
    w_scale.set(size_t(c), 2.0f - 0.02f * float(c % 5));
  out.poison();
  run({{"A", A}, {"W", W}, {"a_scale", a_scale}, {"w_scale", w_scale}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}},
      out);
  double error = 0, norm = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double sum = 0; // the 8-bit values widen exactly
      for (int x = 0; x < K; ++x)
        sum += double(A.at(r, x)) * double(W.at(c, x));
      double pre = sum * a_scale.get(size_t(r)) * w_scale.get(size_t(c)) + bias.get(size_t(c));
      double expected = 0.5 * pre * (1.0 + std::erf(pre / std::sqrt(2.0)));
      double got = out.at(r, c);
      if (!std::isfinite(got))
        return INFINITY;
      error += (got - expected) * (got - expected);
      norm += expected * expected;
    }
  return std::sqrt(error / std::max(norm, 1e-30));
}

} // namespace coalesce::examples
