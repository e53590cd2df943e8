#pragma once
// Shared by the batch tests: each product of a batch against the same
// schedule run on that product alone, and the largest difference between
// a batch's gelu(A W^T + bias) and the product computed in double.

#include "SplitKGemm.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

namespace coalesce::testing {

/// Runs `batched` and `alone` (the same algorithm and schedule, one product
/// without the batch) on the CPU, inputs of type `in`, the output of
/// `out_type`: every product of the batch has the bits of its product
/// alone, and none is NaN.
inline void check_each_product_alone(const examples::BatchedGemm &batched, const examples::BatchedGemm &alone, Type in,
                                     Type out_type, int batch, int M, int N, int K) {
  Buffer a(batched.a_shape(batch, M, K), in), b(batched.b_shape(batch, N, K), in), bias({N}),
      out(batched.out_shape(batch, M, N), out_type);
  a.fill_random(21);
  b.fill_random(22);
  bias.fill_random(23);
  out.poison();
  Pipeline(batched.out).realize_on_cpu(batched.arguments(a, b, bias, batch, M, N, K), out);
  Pipeline one(alone.out);
  for (int z = 0; z < batch; ++z) {
    INFO("product ", z);
    Buffer want(alone.out_shape(1, M, N), out_type);
    want.poison();
    one.realize_on_cpu(alone.arguments(examples::batch_element(a, z), examples::batch_element(b, z), bias, 1, M, N, K),
                       want);
    Buffer got = examples::batch_element(out, z);
    CHECK(same_bits(got, want));
    size_t nan = 0;
    for (size_t e = 0; e < got.size(); ++e)
      nan += std::isnan(got.get(e)) ? 1 : 0;
    CHECK(nan == 0);
  }
}

/// Runs `p` (A batch x M x K, W batch x N x K, scheduled, an f32 output) on
/// the CPU with inputs of type `in`; the largest difference from the
/// product, bias and GELU computed in double.
inline double batched_error_against_double(const examples::BatchedGemm &p, Type in, int batch, int M, int N, int K) {
  Buffer a({batch, M, K}, in), w({batch, N, K}, in), bias({N}), out({batch, M, N});
  a.fill_random(31);
  w.fill_random(32);
  bias.fill_random(33);
  out.poison();
  Pipeline(p.out).realize_on_cpu(p.arguments(a, w, bias, batch, M, N, K), out);
  double worst = 0;
  for (int z = 0; z < batch; ++z)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        double sum = bias.get(c);
        for (int q = 0; q < K; ++q)
          sum += double(a.get((size_t(z) * M + r) * K + q)) * w.get((size_t(z) * N + c) * K + q);
        double want = 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0)));
        worst = std::max(worst, std::fabs(out.get((size_t(z) * M + r) * N + c) - want));
      }
  return worst;
}

} // namespace coalesce::testing
