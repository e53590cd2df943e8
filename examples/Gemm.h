#pragma once
// The algorithm every example schedules: out = epilogue(A * B [+ bias]),
// written once, with no schedule. A schedule (examples/Schedules.h) then
// decides how it runs; it never changes what it computes.

#include "runtime/Coalesce.h"

#include <cstdint>

namespace coalesce::examples {

/// What runs after the reduction, on each element of A * B.
enum class Epilogue { None, Bias, BiasRelu, BiasGelu, BiasGeluTanh };

/// "none", "bias", "bias_relu", "bias_gelu", "bias_gelu_tanh".
inline const char *epilogue_name(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::BiasRelu:
    return "bias_relu";
  case Epilogue::BiasGelu:
    return "bias_gelu";
  case Epilogue::BiasGeluTanh:
    return "bias_gelu_tanh";
  }
  return "unknown";
}

/// True if the epilogue reads the bias (every epilogue but None).
inline bool uses_bias(Epilogue e) { return e != Epilogue::None; }

/// How B is stored: K x N, read B(k, j); or N x K, read B(j, k), as
/// PyTorch's nn.Linear keeps its weight (out = A B^T).
enum class BLayout { KN, NK };

/// The algorithm: acc(i, j) = sum over k of A(i, k) * B(k, j), and
/// out(i, j) = epilogue(acc(i, j) [+ bias(j)]). The handles share their
/// definitions, so a copy of a Gemm schedules the same Funcs. A and B have
/// element type `in`, out has `out_type`; acc and bias are f32. B is stored
/// as `b` says.
struct Gemm {
  Param M, N, K;
  Input A, B, bias;
  Var i, j;
  RDom k;
  Func acc, out;
  Epilogue epilogue;
  Type in = Float(32), out_type = Float(32);
};

/// The epilogue applied to one accumulated value, as the algorithm writes it.
inline Expr apply_epilogue(Epilogue e, const Expr &sum, const Expr &bias) {
  switch (e) {
  case Epilogue::None:
    return sum;
  case Epilogue::Bias:
    return sum + bias;
  case Epilogue::BiasRelu:
    return relu(sum + bias);
  case Epilogue::BiasGelu:
    return gelu(sum + bias);
  case Epilogue::BiasGeluTanh:
    return gelu_tanh(sum + bias);
  }
  return sum;
}

/// make_gemm (below) with the extents given: constants fix them when compiling (as
/// coalesce-aot's -M, -N and -K do), so that where the tiles divide them
/// no guard is left. An undefined extent is its Param (M, N or K), which is
/// otherwise unused.
inline Gemm make_gemm_with_extents(Epilogue e, Type in, Type out, Expr m, Expr n, Expr k, BLayout b = BLayout::KN) {
  Param M("M"), N("N"), K("K");
  m = m.defined() ? m : Expr(M);
  n = n.defined() ? n : Expr(N);
  k = k.defined() ? k : Expr(K);
  const bool nk = b == BLayout::NK;
  Gemm g{M,
         N,
         K,
         Input("A", in, {m, k}),
         nk ? Input("B", in, {n, k}) : Input("B", in, {k, n}),
         Input("bias", Float(32), {n}),
         Var("i"),
         Var("j"),
         RDom(0, k, "k"),
         Func("acc"),
         Func("out"),
         e,
         in,
         out};
  g.acc(g.i, g.j) = 0.0f;
  g.acc(g.i, g.j) += g.A(g.i, g.k) * (nk ? g.B(g.j, g.k) : g.B(g.k, g.j));
  g.out(g.i, g.j) = cast(out, apply_epilogue(e, g.acc(g.i, g.j), g.bias(g.j)));
  return g;
}

/// The unscheduled algorithm: acc is the reduction, out the epilogue
/// (for Epilogue::None, out(i, j) = acc(i, j)). With bf16/f16 inputs the
/// products and the sum are f32 (each input widened exactly, as tensor
/// cores do); a bf16/f16 output rounds the finished f32 value once.
inline Gemm make_gemm(Epilogue e, Type in = Float(32), Type out = Float(32), BLayout b = BLayout::KN) {
  return make_gemm_with_extents(e, in, out, Expr(), Expr(), Expr(), b);
}

/// Inputs for one run: A (M x K), B (K x N) and bias (N), uniform in [-1, 1)
/// (each value exactly representable in its buffer's type).
struct GemmData {
  Buffer a, b, bias;
};

/// Deterministic data: the same seed gives the same values on every machine.
/// A and B have element type `in`; the bias is f32.
inline GemmData make_data(int M, int N, int K, uint32_t seed, Type in = Float(32)) {
  GemmData data{Buffer({M, K}, in), Buffer({K, N}, in), Buffer({N})};
  data.a.fill_random(seed);
  data.b.fill_random(seed + 1);
  data.bias.fill_random(seed + 2);
  return data;
}

/// The named arguments of a run. The bias is passed only when the epilogue
/// reads it: an argument the pipeline does not take is an error.
inline Arguments gemm_arguments(const GemmData &data, int M, int N, int K, Epilogue e) {
  Arguments args{{"A", data.a}, {"B", data.b}, {"M", M}, {"N", N}, {"K", K}};
  if (uses_bias(e))
    args.emplace("bias", data.bias);
  return args;
}

} // namespace coalesce::examples
