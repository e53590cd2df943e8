#include "runtime/TuningProblem.h"

#include "dsl/Error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace coalesce {

namespace {

bool one_of(const std::string &value, const std::vector<std::string> &allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

} // namespace

std::string GemmProblem::shape() const { return str_cat(M, "x", N, "x", K); }

int64_t nearest_power_of_two(int64_t extent) {
  if (extent <= 1)
    return 1;
  // Halves up: 3 -> 4, 6 -> 8 (log2(6) = 2.58), 5 -> 4.
  int exponent = static_cast<int>(std::lround(std::log2(static_cast<double>(extent))));
  return int64_t{1} << std::min(exponent, 62);
}

std::string GemmProblem::shape_class() const {
  return str_cat("~", nearest_power_of_two(M), "x~", nearest_power_of_two(N), "x~", nearest_power_of_two(K));
}

const char *b_layout_name(GemmBLayout layout) { return layout == GemmBLayout::NK ? "nk" : "kn"; }

std::string GemmProblem::str() const {
  return str_cat(dtype, "->", out_dtype, " ", epilogue, " ", shape(), b_layout == GemmBLayout::NK ? " B nk" : "");
}

void GemmProblem::validate() const {
  if (!one_of(dtype, {"f32", "tf32", "bf16", "f16"}))
    user_error("GEMM problem: dtype '", dtype, "' is not one of f32, tf32, bf16, f16");
  if (!one_of(out_dtype, {"f32", "bf16", "f16"}))
    user_error("GEMM problem: out_dtype '", out_dtype, "' is not one of f32, bf16, f16");
  if (!one_of(epilogue, {"none", "bias", "bias_relu", "bias_gelu", "bias_gelu_tanh", "bias_sigmoid", "bias_silu"}))
    user_error("GEMM problem: epilogue '", epilogue,
               "' is not one of none, bias, bias_relu, bias_gelu, bias_gelu_tanh, bias_sigmoid, bias_silu");
  if (M <= 0 || N <= 0 || K <= 0)
    user_error("GEMM problem: shape ", shape(), " is not positive; tuning needs the exact M, N and K");
  // The FFMA schedules have not run on a GPU with B(j, k).
  if (b_layout == GemmBLayout::NK && dtype == "f32")
    user_error("GEMM problem: B stored N x K (b nk) runs on tensor cores; dtype f32 (FFMA) takes B stored K x N");
}

Type gemm_input_type(const GemmProblem &problem) {
  return problem.dtype == "bf16" ? BFloat(16) : problem.dtype == "f16" ? Float(16) : Float(32);
}

Type gemm_output_type(const GemmProblem &problem) {
  return problem.out_dtype == "bf16" ? BFloat(16) : problem.out_dtype == "f16" ? Float(16) : Float(32);
}

bool gemm_uses_bias(const GemmProblem &problem) { return problem.epilogue != "none"; }

} // namespace coalesce
