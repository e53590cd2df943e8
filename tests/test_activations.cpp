// The activation library (dsl/Activations.h): each function against its
// formula in double on the CPU, at ordinary values, at the extremes where
// exp overflows, and at the special values, through a compiled Func; and
// each one compiles for the GPU without a call left in the PTX.

#include "dsl/Activations.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

double exact(const std::string &name, double x) {
  if (name == "relu")
    return std::isnan(x) ? x : std::max(x, 0.0);
  if (name == "gelu")
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); // = 0.5 x (1 + erf(x / sqrt(2))), without its cancellation
  if (name == "gelu_tanh")
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (name == "sigmoid")
    return 1 / (1 + std::exp(-x));
  if (name == "silu")
    return x / (1 + std::exp(-x));
  return x; // identity
}

std::vector<float> run_on_cpu(const std::string &name, const std::vector<float> &inputs) {
  Param n("n");
  Input x("x", Float(32), {n});
  Var i("i");
  Func out("out");
  out(i) = activation(name, x(i));
  Buffer in({int(inputs.size())}), result({int(inputs.size())});
  for (size_t k = 0; k < inputs.size(); ++k)
    in(int(k)) = inputs[k];
  Pipeline(out).realize_on_cpu({{"x", in}, {"n", int(inputs.size())}}, result);
  std::vector<float> values;
  for (size_t k = 0; k < inputs.size(); ++k)
    values.push_back(result(int(k)));
  return values;
}

} // namespace

TEST_CASE("every activation matches its formula in double, to a few f32 ulps, through the extremes") {
  std::vector<float> inputs = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.5f, -0.5f, 1.0f, -1.0f, 3.0f, -3.0f, 20.0f, -20.0f,
                               80.0f, -80.0f, 88.0f, 89.0f, 100.0f, 1e30f, kInf};
  for (float v = -12.0f; v <= 12.0f; v += 0.37f)
    inputs.push_back(v);
  for (const char *name : {"relu", "gelu", "gelu_tanh", "sigmoid", "silu", "identity"}) {
    std::vector<float> got = run_on_cpu(name, inputs);
    for (size_t k = 0; k < inputs.size(); ++k) {
      double want = exact(name, double(inputs[k]));
      // f32 evaluation of the same formula: where exp(-x) overflows f32
      // (x below about -88.7) sigmoid and silu are 0 (PyTorch's values).
      if (inputs[k] < -88.0f && (std::string(name) == "sigmoid" || std::string(name) == "silu"))
        want = std::fabs(want) < 1e-36 ? 0.0 : want;
      INFO(std::string(name), "(", inputs[k], ") = ", got[k], ", want ", want);
      if (std::isnan(want)) {
        CHECK(std::isnan(got[k]));
        continue;
      }
      if (std::isinf(want)) {
        CHECK(double(got[k]) == want);
        continue;
      }
      // gelu_tanh's 1 + tanh(...) cancels for negative x: an absolute error
      // of a few f32 ulps of 1, times |x| (PyTorch's formula has the same).
      // gelu's erfc does not: its error is relative to the value everywhere
      // (gelu(-12) is about -2e-32), the f32 rounding of its argument
      // -x / sqrt(2) growing by x^2 in the tail (erfc's log falls as z^2).
      const double x = double(inputs[k]);
      const bool cancels = std::string(name) == "gelu_tanh";
      const double relative = std::string(name) == "gelu" ? 4e-7 + 1.2e-7 * x * x : 4e-7;
      const double tolerance = relative * std::fabs(want) + (cancels ? 4e-7 * std::fabs(x) : 1e-37);
      CHECK(std::fabs(double(got[k]) - want) <= tolerance);
    }
  }
}

TEST_CASE("sigmoid and silu at the special values") {
  const std::vector<float> specials = {kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), -100.0f};
  std::vector<float> s = run_on_cpu("sigmoid", specials), u = run_on_cpu("silu", specials);
  CHECK(s[0] == 1.0f);
  CHECK(s[1] == 0.0f);
  CHECK(std::isnan(s[2]));
  CHECK(s[3] == 0.0f);
  CHECK(u[0] == kInf);
  CHECK(std::isnan(u[1])); // -inf / inf, as PyTorch's silu(-inf)
  CHECK(std::isnan(u[2]));
  CHECK(u[3] == 0.0f);
  CHECK(std::signbit(u[3]));
}

TEST_CASE("an activation that does not exist is a user error naming the library's") {
  Param n("n");
  Input x("x", Float(32), {n});
  CHECK_THROWS_WITH_AS(activation("swish", x(Var("i"))),
                       doctest::Contains("no activation named 'swish': the library has relu, gelu, gelu_tanh, "
                                         "sigmoid, silu and identity"),
                       UserError);
}

TEST_CASE("sigmoid and silu compile for the GPU with no call left") {
  for (const char *name : {"sigmoid", "silu"}) {
    Param n("n");
    Input x("x", Float(32), {n});
    Var i("i"), bi("bi"), ti("ti");
    Func out("out");
    out(i) = activation(name, x(i));
    out.split(i, bi, ti, 128).gpu_blocks({bi}).gpu_threads({ti});
    std::string ptx = Pipeline(out).ptx();
    INFO(name, ":\n", ptx);
    CHECK(ptx.find("ex2.approx") != std::string::npos);
    CHECK(ptx.find("call") == std::string::npos);
  }
}
