#include "bench/gpu_check/SwiGluCheck.h"

#include "bench/gpu_check/Report.h"
#include "examples/SwiGlu.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

void check_swiglu(Type in, Type out, const std::string &form, const std::optional<TileCopies> &copies) {
  const std::string name = str_cat("swiglu ", form, " ", in, " in, ", out, " out");
  std::optional<examples::SwiGlu> s;
  std::optional<Pipeline> pipeline;
  std::string failure;
  try {
    s.emplace(in, out);
    s->schedule_ffma(copies);
    pipeline.emplace(s->y);
  } catch (const std::exception &error) {
    failure = error.what();
  }
  // Partial tiles and a K that is no multiple of the step; K = 0 (no
  // products: silu(0) * 0), and the K = 1 / K = 3 pair.
  for (const Shape &shape :
       std::vector<Shape>{{70, 75, 37}, {131, 133, 67}, {64, 64, 64}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
    Outcome o;
    o.failure = failure;
    o.detail = "FFMA, 32 x 32 tiles, both k loops in one nest";
    if (pipeline) {
      try {
        o.error = examples::swiglu_error(in, out, shape.M, shape.N, shape.K,
                                         [&](const Arguments &args, Buffer &y) { pipeline->realize_on_gpu(args, y); });
        o.not_finite = std::isfinite(o.error) ? 0 : 1;
        // f32 sums of exact products (bf16) or of rounded ones (f32); a
        // 16-bit output rounds each element once (2^-9 relative).
        o.tolerance = out == Float(32) ? 1e-5 : 4e-3;
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, shape.str(), "double (all rows)", o);
  }
}

} // namespace

void check_fused_reductions() {
  std::printf("\n== two reductions in one nest (fuse_reduction_with) ==\n");
  const std::vector<std::pair<std::string, std::optional<TileCopies>>> forms = {
      {"unstaged", std::nullopt},
      {"staged, one buffer", TileCopies{OneBuffer{}}},
      {"staged, registers", TileCopies{RegisterDoubleBuffer{true}}},
      {"staged, cp.async", TileCopies{AsyncCopies{3, true}}}};
  for (const auto &[form, copies] : forms) {
    check_swiglu(Float(32), Float(32), form, copies);
    check_swiglu(BFloat(16), BFloat(16), form, copies);
  }
}

} // namespace coalesce::gpu_check
