#pragma once
// The double reference of a GEMM + bias + exact GELU on a few rows, for the
// checks that compare a kernel's output with it: ||got - want|| / ||want||
// over the rows added, want = gelu(sum + bias) in double from the inputs'
// values (as the instruction multiplies them: the caller's accessors).

#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Buffer.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace coalesce::gpu_check {

/// `count` rows spread evenly over M, the first and the last included
/// (every row where M <= count).
inline std::vector<int> sampled_rows(int M, int count) {
  std::vector<int> rows;
  for (int n = 0; n < count && n < M; ++n)
    rows.push_back(M <= count ? n : static_cast<int>(int64_t(n) * (M - 1) / (count - 1)));
  return rows;
}

class BiasGeluError {
public:
  /// Adds one row of one product: `a(q)` is the row's A(r, q), `b(q, c)`
  /// B(q, c), `got(c)` the kernel's out(r, c); N columns, K terms, `bias`
  /// of N elements. The sums run k outer, so B is read row by row.
  template <typename ARow, typename B, typename Got>
  void add_row(const Buffer &bias, int N, int K, ARow a, B b, Got got) {
    sums_.assign(static_cast<size_t>(N), 0.0);
    for (int q = 0; q < K; ++q) {
      const double x = a(q);
      for (int c = 0; c < N; ++c)
        sums_[static_cast<size_t>(c)] += x * b(q, c);
    }
    for (int c = 0; c < N; ++c) {
      const double want = examples::reference_epilogue<double>(examples::Epilogue::BiasGelu,
                                                               sums_[static_cast<size_t>(c)], bias.get(size_t(c)));
      const double d = got(c) - want;
      diff_ += d * d;
      norm_ += want * want;
    }
  }
  /// The relative error; infinity where a difference is not finite, or
  /// where the reference is all zeros and the output is not.
  double error() const {
    if (!std::isfinite(diff_))
      return std::numeric_limits<double>::infinity();
    if (norm_ == 0)
      return diff_ == 0 ? 0 : std::numeric_limits<double>::infinity();
    return std::sqrt(diff_ / norm_);
  }

private:
  std::vector<double> sums_;
  double diff_ = 0, norm_ = 0;
};

/// The error of `got` (M x N, row-major) on `count` rows of data's product
/// (A M x K and B K x N, dense) sampled by sampled_rows.
inline double sampled_bias_gelu_error(const examples::GemmData &data, int M, int N, int K, int count,
                                      const std::vector<float> &got) {
  BiasGeluError reference;
  for (int i : sampled_rows(M, count))
    reference.add_row(
        data.bias, N, K, [&](int k) { return double(data.a.get(size_t(i) * K + k)); },
        [&](int k, int j) { return double(data.b.get(size_t(k) * N + j)); },
        [&](int j) { return double(got[size_t(i) * N + j]); });
  return reference.error();
}

} // namespace coalesce::gpu_check
