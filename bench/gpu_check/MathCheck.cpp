#include "bench/gpu_check/MathCheck.h"

#include "bench/gpu_check/Report.h"
#include "runtime/Coalesce.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The distance in f32 steps between `got` and the exact `want`: the ulp of
// an f32 at want's binade (denormal spacing below the smallest normal).
double ulp_error(float got, double want) {
  double magnitude = std::fabs(want);
  int exponent = magnitude < std::numeric_limits<float>::min() ? -126 : std::ilogb(magnitude);
  return std::fabs(double(got) - want) / std::ldexp(1.0, exponent - 23);
}

// Every 2^(32 - log2(count))-th bit pattern of both signs, finite ones
// only: all binades, denormals included, evenly.
std::vector<float> sweep(size_t count) {
  std::vector<float> values;
  values.reserve(count);
  const uint64_t stride = (uint64_t{1} << 32) / count;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += stride) {
    float value = float_of(uint32_t(bits));
    if (std::isfinite(value))
      values.push_back(value);
  }
  return values;
}

struct MathFunction {
  const char *name;
  std::function<Expr(Expr)> gpu;
  double (*exact)(double);
  // ulp allowed: libdevice's documented maximum for erff, expf and tanhf;
  // for sigmoid and silu, exp's 2 plus the addition's and the division's
  // roundings.
  double tolerance;
  // Below this input the result is documented as a limit (sigmoid's 0,
  // silu's -0 once exp(-x) overflows), not within `tolerance`: there the
  // check asks only that it be under 1e-36 in magnitude.
  double lowest = -std::numeric_limits<double>::infinity();
};

void check_function(const MathFunction &f, const std::vector<float> &inputs) {
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> all(inputs);
  all.insert(all.end(), std::begin(specials), std::end(specials));
  const int n = static_cast<int>(all.size());
  Outcome o;
  o.tolerance = f.tolerance;
  try {
    Param count("count");
    Input x("x", Float(32), {count});
    Var i("i"), bi("bi"), ti("ti");
    Func out("out");
    out(i) = f.gpu(x(i));
    out.split(i, bi, ti, 256).gpu_blocks({bi}).gpu_threads({ti});
    Pipeline pipeline(out);
    Buffer in({n}), result({n});
    for (int e = 0; e < n; ++e)
      in(e) = all[size_t(e)];
    result.poison();
    pipeline.realize_on_gpu({{"x", in}, {"count", n}}, result);
    double worst = 0;
    float worst_at = 0;
    for (int e = 0; e < n; ++e) {
      float got = result(e), value = all[size_t(e)];
      double want = f.exact(double(value));
      if (std::isnan(want) != std::isnan(got) || (std::isinf(want) && double(got) != want) ||
          (want == 0 && (got != 0 || std::signbit(got) != std::signbit(want)))) {
        char text[160];
        std::snprintf(text, sizeof text, "%s(%a) = %a on the GPU, %a wanted", f.name, double(value), double(got),
                      want);
        o.failure = text;
        break;
      }
      // Past the largest f32 (exp from 88.72 on), rounding gives infinity.
      if (std::isinf(float(want)) && !std::isnan(want)) {
        if (double(got) != double(float(want)))
          o.failure = std::string(f.name) + ": a result past the largest f32 is not infinity";
        continue;
      }
      if (std::isnan(want))
        continue;
      if (double(value) < f.lowest) {
        if (std::fabs(got) > 1e-36)
          o.failure = std::string(f.name) + ": a result below its documented input range is not near 0";
        continue;
      }
      // A result below the smallest normal may flush to zero (exp's ex2 does).
      if (std::fabs(want) < std::numeric_limits<float>::min()) {
        if (std::fabs(got) > std::numeric_limits<float>::min())
          o.failure = std::string(f.name) + ": a result below the smallest normal came out larger";
        continue;
      }
      double error = ulp_error(got, want);
      if (error > worst) {
        worst = error;
        worst_at = value;
      }
    }
    o.error = worst;
    char text[80];
    std::snprintf(text, sizeof text, "largest at x = %a", double(worst_at));
    o.detail = text;
  } catch (const std::exception &error) {
    o.failure = error.what();
  }
  record(std::string(f.name) + " (f32, ulp)", std::to_string(n) + " inputs", "double", o);
}

} // namespace

void check_math_functions() {
  std::printf("\n== math functions: ulp error against double ==\n");
  const std::vector<float> inputs = sweep(size_t{1} << 22);
  const MathFunction functions[] = {
      {"erf", [](Expr v) { return erf(v); }, [](double v) { return std::erf(v); }, 2},
      // erfc's straight-line form (codegen/GpuErf.h): relative to the
      // value, which 2^x's own error (ex2.approx) and the rounding of the
      // exponent -x^2 + P(t) in f32 (|x|^2 ulps of 2^-24) bound from below.
      {"erfc", [](Expr v) { return erfc(v); }, [](double v) { return std::erfc(v); }, 256},
      // gelu = 0.5 x erfc(-x / sqrt(2)): erfc's error, and the f32 rounding
      // of its argument, which the tail's slope magnifies (about x^2 ulps:
      // 261 measured on the H200 at x = -11.6, where gelu is about -1e-30);
      // below about -13 it is under the smallest normal.
      {"gelu", [](Expr v) { return gelu(v); },
       [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }, 512, -13},
      {"exp", [](Expr v) { return exp(v); }, [](double v) { return std::exp(v); }, 2},
      {"tanh", [](Expr v) { return tanh(v); }, [](double v) { return std::tanh(v); }, 2},
      // The activations built on exp (dsl/Activations), as their formulas
      // give them; exp(-x) overflows below about -88.72.
      {"sigmoid", [](Expr v) { return sigmoid(v); }, [](double v) { return 1 / (1 + std::exp(-v)); }, 3, -88},
      {"silu", [](Expr v) { return silu(v); }, [](double v) { return v / (1 + std::exp(-v)); }, 3, -88},
  };
  for (const MathFunction &f : functions)
    check_function(f, inputs);
}

} // namespace coalesce::gpu_check
