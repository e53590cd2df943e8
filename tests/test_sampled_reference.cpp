// The GPU check's sampled double reference (bench/gpu_check/
// SampledReference.h), which five of its sections judge kernels by: the
// rows it samples, and the relative error it reports for an exact output,
// a perturbed one, one with a NaN, and an all-zero reference.

#include "bench/gpu_check/SampledReference.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace coalesce;
using coalesce::gpu_check::BiasGeluError;
using coalesce::gpu_check::sampled_rows;

namespace {

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// A 2 x 3 (rows) by K = 2 product: A(r, q) = r + q + 1, B(q, c) = q - c,
// bias(c) = c / 4.
double a_at(int r, int q) { return r + q + 1; }
double b_at(int q, int c) { return q - c; }
double exact(const Buffer &bias, int r, int c) {
  double sum = 0;
  for (int q = 0; q < 2; ++q)
    sum += a_at(r, q) * b_at(q, c);
  return gelu(sum + bias.get(size_t(c)));
}

} // namespace

TEST_CASE("the sampled rows spread over M, first and last included, every row where M is small") {
  CHECK(sampled_rows(131, 8) == std::vector<int>{0, 18, 37, 55, 74, 92, 111, 130});
  CHECK(sampled_rows(5, 8) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(sampled_rows(8, 8) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(sampled_rows(0, 4).empty());
}

TEST_CASE("the sampled reference's error: 0 when exact, the relative norm when not, infinity for a NaN") {
  Buffer bias({3});
  for (int c = 0; c < 3; ++c)
    bias.set(size_t(c), c / 4.0f);
  auto error_of = [&](double (*got)(const Buffer &, int, int)) {
    BiasGeluError reference;
    for (int r : {0, 1})
      reference.add_row(
          bias, 3, 2, [&](int q) { return a_at(r, q); }, [&](int q, int c) { return b_at(q, c); },
          [&](int c) { return got(bias, r, c); });
    return reference.error();
  };
  CHECK(error_of(exact) == 0);
  // Every element 1% high: a relative error of 1%.
  CHECK(error_of([](const Buffer &bias, int r, int c) { return exact(bias, r, c) * 1.01; }) ==
        doctest::Approx(0.01).epsilon(1e-9));
  CHECK(std::isinf(error_of([](const Buffer &bias, int r, int c) {
    return r == 1 && c == 2 ? std::numeric_limits<double>::quiet_NaN() : exact(bias, r, c);
  })));
  // A reference of zeros: 0 for zeros, infinity for anything else.
  Buffer zero_bias({3});
  BiasGeluError zeros, off;
  zeros.add_row(
      zero_bias, 3, 1, [](int) { return 0.0; }, [](int, int) { return 1.0; }, [](int) { return 0.0; });
  off.add_row(
      zero_bias, 3, 1, [](int) { return 0.0; }, [](int, int) { return 1.0; }, [](int c) { return c == 1 ? 0.5 : 0.0; });
  CHECK(zeros.error() == 0);
  CHECK(std::isinf(off.error()));
}
