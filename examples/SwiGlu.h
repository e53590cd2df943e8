#pragma once
// A SwiGLU MLP's gate and up projections as the GPU check writes them
// (lesson 11 spells the same algorithm out):
//
//   g(i, j) = sum over k of x(i, k) * Wg(j, k)        x: M x K, Wg and Wu: N x K
//   u(i, j) = sum over k of x(i, k) * Wu(j, k)
//   y(i, j) = out_type(silu(g(i, j)) * u(i, j))
//
// Both sums computed on y's tile, their update loops merged by
// fuse_reduction_with, so each x(i, k) is read once for both; the epilogue
// after both sums are complete. The same algorithm for the tests, the GPU
// check and coalesce-aot's gemm --epilogue=swiglu, which gives the sizes
// (SwiGluSizes) where they are fixed when generating.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace coalesce::examples {

/// The sizes (constants, say); an undefined one is a Param named "M", "N"
/// or "K", passed at run time.
struct SwiGluSizes {
  Expr M, N, K;
};

struct SwiGlu {
  Expr M, N, K;
  Input x, Wg, Wu;
  Var i{"i"}, j{"j"};
  RDom k;
  Func g{"g"}, u{"u"}, y{"y"};

  /// The algorithm, inputs of type `in`, y of type `out`, unscheduled.
  SwiGlu(Type in, Type out, const SwiGluSizes &sizes = {})
      : M(size(sizes.M, "M")), N(size(sizes.N, "N")), K(size(sizes.K, "K")), x("x", in, {M, K}), Wg("Wg", in, {N, K}),
        Wu("Wu", in, {N, K}), k(0, K, "k") {
    g(i, j) = 0.0f;
    g(i, j) += x(i, k) * Wg(j, k);
    u(i, j) = 0.0f;
    u(i, j) += x(i, k) * Wu(j, k);
    y(i, j) = cast(out, silu(g(i, j)) * u(i, j));
  }

  /// 32 x 32 tiles of 16 x 16 threads holding 2 x 2 of each sum, K in
  /// steps of 8, both k loops split and ordered alike and merged; with
  /// `copies`, x, Wg and Wu staged in shared memory at each step (x once,
  /// for both sums).
  SwiGlu &schedule_ffma(const std::optional<TileCopies> &copies = std::nullopt) {
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    RVar ko("ko"), ki("ki");
    y.tile(i, j, bi, bj, ii, jj, 32, 32)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 2, 2)
        .gpu_threads({ti, tj});
    y.fuse_epilogue(g, bj);
    y.fuse_epilogue(u, bj);
    for (Func *f : {&g, &u})
      f->update().split(k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
    if (copies) {
      g.update().stage_in_shared(x, ko, SharedLayout{}, *copies).stage_in_shared(Wg, ko, SharedLayout{}, *copies);
      u.update().stage_in_shared(x, ko, SharedLayout{}, *copies).stage_in_shared(Wu, ko, SharedLayout{}, *copies);
    }
    u.fuse_reduction_with(g);
    return *this;
  }

  /// On tensor cores (an MMA tiling for `in`; on the warpgroup MMA,
  /// default_fused_gemms_tiling's): one tile of x feeds both sums'
  /// instructions, both accumulators in registers.
  SwiGlu &schedule_mma(const MmaTiling &t) {
    schedule_fused_gemms_mma(y, g, Wg, u, Wu, x, i, j, k, t);
    return *this;
  }

private:
  static Expr size(const Expr &given, const char *name) { return given.defined() ? given : Expr(Param(name)); }
};

/// The inputs at M x N x K (fixed seeds, uniform in [-1, 1)) of type `in`,
/// `run` on them into a poisoned output of type `out` (a Pipeline's
/// realize_on_cpu or realize_on_gpu), then ||y - reference|| /
/// ||reference|| against the double reference on every element; infinity
/// if one is not finite.
inline double swiglu_error(Type in, Type out, int M, int N, int K,
                           const std::function<void(const Arguments &, Buffer &)> &run) {
  Buffer x({M, K}, in), Wg({N, K}, in), Wu({N, K}, in), y({M, N}, out);
  x.fill_random(1);
  Wg.fill_random(2);
  Wu.fill_random(3);
  y.poison();
  run({{"x", x}, {"Wg", Wg}, {"Wu", Wu}, {"M", M}, {"N", N}, {"K", K}}, y);
  double error = 0, norm = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double gate = 0, up = 0;
      for (int s = 0; s < K; ++s) {
        gate += double(x.at(r, s)) * double(Wg.at(c, s));
        up += double(x.at(r, s)) * double(Wu.at(c, s));
      }
      double expected = gate / (1.0 + std::exp(-gate)) * up, got = y.at(r, c);
      if (!std::isfinite(got))
        return INFINITY;
      error += (got - expected) * (got - expected);
      norm += expected * expected;
    }
  return std::sqrt(error / std::max(norm, 1e-30));
}

} // namespace coalesce::examples
