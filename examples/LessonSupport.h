#pragma once
// What every lesson does after scheduling: print the loop nest, confirm it
// is the catalog's schedule (so the tests check exactly what the lesson
// shows), run it on the CPU at a ragged shape and compare with the
// double-precision reference. Each returns false on a mismatch, and the
// lesson exits non-zero.

#include "examples/Reference.h"
#include "examples/Schedules.h"

#include <cstdio>
#include <iostream>
#include <string>

namespace coalesce::examples {

/// The largest relative error (Frobenius norm) a schedule may show in f32.
constexpr double kTolerance = 1e-5;

/// Prints the loop nest with a title.
inline void print_loop_nest(const std::string &title, const Pipeline &pipeline) {
  std::cout << "---- " << title << " ----\n" << pipeline.loop_nest() << "\n";
}

/// True if the lesson's schedule prints the same loop nest as the catalog
/// entry `name` (examples/Schedules.h), which the tests cover at many shapes.
inline bool matches_catalog(const std::string &name, const Pipeline &pipeline) {
  Gemm catalog = scheduled_gemm(find_schedule(name));
  if (Pipeline(catalog.out).loop_nest() == pipeline.loop_nest())
    return true;
  std::cout << "MISMATCH: this schedule differs from the catalog's '" << name << "'\n";
  return false;
}

/// Runs on the CPU at M x N x K (output poisoned with NaN first, so an
/// unwritten element shows) and compares with `expected`.
inline bool check_against(Pipeline &pipeline, const GemmData &data, int M, int N, int K, Epilogue e,
                          const Buffer &expected, const char *what) {
  Buffer out({M, N});
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, e), out);
  double error = relative_error(out, expected);
  bool ok = error < kTolerance;
  std::printf("%dx%dx%d, %s: relative error %.3g, unwritten %zu -> %s\n", M, N, K, what, error, count_nan(out),
              ok ? "ok" : "MISMATCH");
  return ok;
}

/// check_against the double-precision reference, with data from a fixed seed.
inline bool check_on_cpu(Pipeline &pipeline, Epilogue e, int M, int N, int K) {
  GemmData data = make_data(M, N, K, 2024);
  return check_against(pipeline, data, M, N, K, e, reference(data, M, N, K, e), "vs double reference");
}

/// A 16-bit output against its double reference: ||got - want|| / ||want||
/// within twice the bf16 rounding (the f32 sums add far less) and every
/// element written; prints one line ("MxNxK[, what]: ...") and says whether
/// it matched.
inline bool bf16_output_matches(int M, int N, int K, const Buffer &got, const Buffer &want, const char *what = nullptr) {
  const double tolerance = 1.0 / 256;
  double error = relative_error(got, want);
  size_t unwritten = count_nan(got);
  bool ok = error < tolerance && unwritten == 0;
  std::printf("%dx%dx%d%s%s: relative error %.3g (tolerance %.3g), unwritten %zu -> %s\n", M, N, K, what ? ", " : "",
              what ? what : "", error, tolerance, unwritten, ok ? "ok" : "MISMATCH");
  return ok;
}

/// Runs a lesson body, turning an exception into a message and exit code 1.
template <typename Body> int run_lesson(Body body) {
  try {
    return body() ? 0 : 1;
  } catch (const std::exception &error) {
    std::cout << "ERROR: " << error.what() << "\n";
    return 1;
  }
}

} // namespace coalesce::examples
