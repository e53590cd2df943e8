// A user's first program: the fused GEMM + bias + GELU of the README,
// scheduled for the GPU and run on the CPU (ORC JIT), checked against a
// double-precision reference. Exits non-zero on a mismatch.

#include "runtime/Coalesce.h"

// The public header must not need the CUDA toolkit's headers.
#ifdef CUDA_VERSION
#error "runtime/Coalesce.h includes cuda.h"
#endif

#include <cmath>
#include <cstdio>

using namespace coalesce;

int main() {
  Param M("M"), N("N"), K("K");
  Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N}), bias("bias", Float(32), {N});
  Var i("i"), j("j"), bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RDom k(0, K, "k");
  RVar ko("ko"), ki("ki");

  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = gelu(acc(i, j) + bias(j));

  out.tile(i, j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, 4, 4).gpu_threads({ti, tj});
  out.fuse_epilogue(acc, bj);
  acc.update().split(k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki)
      .stage_in_shared(A, ko).stage_in_shared(B, ko);

  Pipeline pipeline(out);
  const int m = 70, n = 75, kk = 21;
  Buffer a({m, kk}), b({kk, n}), c({n}), result({m, n});
  a.fill_random(1);
  b.fill_random(2);
  c.fill_random(3);
  pipeline.realize_on_cpu({{"A", a}, {"B", b}, {"bias", c}, {"M", m}, {"N", n}, {"K", kk}}, result);

  int wrong = 0;
  for (int row = 0; row < m; ++row)
    for (int col = 0; col < n; ++col) {
      double sum = double(c.get(static_cast<size_t>(col)));
      for (int r = 0; r < kk; ++r)
        sum += double(a.at(row, r)) * double(b.at(r, col));
      double expected = 0.5 * sum * (1.0 + std::erf(sum / std::sqrt(2.0)));
      if (std::fabs(double(result.at(row, col)) - expected) > 1e-4 * (1.0 + std::fabs(expected)) && wrong++ < 5)
        std::printf("out[%d, %d] = %.7g, expected %.7g\n", row, col, double(result.at(row, col)), expected);
    }
  std::printf("%s: %d of %d elements differ from the double reference\n", wrong ? "FAIL" : "ok", wrong, m * n);
  return wrong ? 1 : 0;
}
