#pragma once
// Two epilogues that read more than the sum and a bias, written as the
// algorithm says them (lesson 9; the GPU check runs the same ones):
//
//   Residual:  out(i, j) = bf16(gelu(acc(i, j) + bias(j)) + residual(i, j))
//   Scaled:    out(i, j) = bf16(acc(i, j) * alpha(j) + beta(0) * C(i, j))
//
// with acc(i, j) = sum over k of A(i, k) * B(k, j) in f32. alpha is a
// per-column (per output channel) scale, beta a scale read at run time
// from a one-element input, C and residual M x N bf16 inputs read at the
// output's own coordinates. Both are any expression after the one
// reduction: the epilogue runs once per output element, after the sum is
// complete, whatever the schedule.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"

#include <cmath>
#include <map>
#include <string>

namespace coalesce::examples {

enum class ExtraEpilogue { Residual, Scaled };

inline const char *extra_epilogue_name(ExtraEpilogue e) {
  return e == ExtraEpilogue::Residual ? "gelu(acc + bias) + residual" : "acc * alpha + beta * C";
}

struct ExtraEpilogueGemm {
  Input A, B, bias, residual, alpha, beta, C;
  Func acc, out;
  Var i, j;
  RDom k;
};

/// The algorithm, bf16 A, B, residual / C and output; f32 bias, alpha, beta.
inline ExtraEpilogueGemm make_extra_epilogue_gemm(ExtraEpilogue e) {
  Param M("M"), N("N"), K("K");
  const Type bf16 = BFloat(16);
  ExtraEpilogueGemm g{Input("A", bf16, {M, K}),
                      Input("B", bf16, {K, N}),
                      Input("bias", Float(32), {N}),
                      Input("residual", bf16, {M, N}),
                      Input("alpha", Float(32), {N}),
                      Input("beta", Float(32), {1}),
                      Input("C", bf16, {M, N}),
                      Func("acc"),
                      Func("out"),
                      Var("i"),
                      Var("j"),
                      RDom(0, K, "k")};
  g.acc(g.i, g.j) = 0.0f;
  g.acc(g.i, g.j) += g.A(g.i, g.k) * g.B(g.k, g.j);
  if (e == ExtraEpilogue::Residual)
    g.out(g.i, g.j) = cast(bf16, gelu(g.acc(g.i, g.j) + g.bias(g.j)) + g.residual(g.i, g.j));
  else
    g.out(g.i, g.j) = cast(bf16, g.acc(g.i, g.j) * g.alpha(g.j) + g.beta(0) * g.C(g.i, g.j));
  return g;
}

/// Inputs for one problem, from a fixed seed; `arguments` names only those
/// the epilogue reads.
struct ExtraEpilogueData {
  int M, N, K;
  Buffer A, B, bias, residual, alpha, beta, C;

  ExtraEpilogueData(int m, int n, int k, uint64_t seed)
      : M(m), N(n), K(k), A({m, k}, BFloat(16)), B({k, n}, BFloat(16)), bias({n}), residual({m, n}, BFloat(16)),
        alpha({n}), beta({1}), C({m, n}, BFloat(16)) {
    A.fill_random(seed);
    B.fill_random(seed + 1);
    bias.fill_random(seed + 2);
    residual.fill_random(seed + 3);
    alpha.fill_random(seed + 4);
    C.fill_random(seed + 5);
    beta.set(0, -0.75f);
  }

  Arguments arguments(ExtraEpilogue e) const {
    Arguments args{{"A", A}, {"B", B}, {"M", M}, {"N", N}, {"K", K}};
    if (e == ExtraEpilogue::Residual) {
      args.emplace("bias", bias);
      args.emplace("residual", residual);
    } else {
      args.emplace("alpha", alpha);
      args.emplace("beta", beta);
      args.emplace("C", C);
    }
    return args;
  }

  /// The epilogue on the double sum of the inputs' exact values, rounded
  /// once to float.
  Buffer reference(ExtraEpilogue e) const {
    Buffer want({M, N});
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += double(A.at(i, k)) * double(B.at(k, j));
        double v = e == ExtraEpilogue::Residual
                       ? reference_epilogue<double>(Epilogue::BiasGelu, sum, bias.get(size_t(j))) + residual.at(i, j)
                       : sum * alpha.get(size_t(j)) + double(beta.get(0)) * C.at(i, j);
        want(i, j) = float(v);
      }
    return want;
  }
};

/// Twice the bf16 output's rounding (2^-8); the f32 sum adds far less.
constexpr double kBf16OutputTolerance = 1.0 / 256;

/// The output widened to f32, for relative_error and count_nan.
inline Buffer widened(const Buffer &out) {
  Buffer wide(out.shape());
  for (int i = 0; i < out.shape()[0]; ++i)
    for (int j = 0; j < out.shape()[1]; ++j)
      wide(i, j) = out.at(i, j);
  return wide;
}

} // namespace coalesce::examples
