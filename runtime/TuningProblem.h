#pragma once
// What the autotuner and the tuning database key on: a GEMM problem (the
// precision, the output type, the epilogue and the shape) and the GPU it
// runs on. A problem says what is computed; a GemmCandidate
// (runtime/GemmCandidate.h) says how.

#include "dsl/Type.h"

#include <cstdint>
#include <string>

namespace coalesce {

/// How B is stored: K x N, read B(k, j); or N x K, read B(j, k), as
/// PyTorch's nn.Linear keeps its weight (out = A B^T).
enum class GemmBLayout { KN, NK };

/// "kn" or "nk", as the tuning database and coalesce-aot's --b write it.
const char *b_layout_name(GemmBLayout layout);

/// out = epilogue(A B [+ bias]), A M x K, B K x N or N x K (b_layout), all
/// row-major.
struct GemmProblem {
  /// A's and B's precision and how they are multiplied: "f32" (FFMA),
  /// "tf32" (f32 data rounded to tf32 on tensor cores), "bf16" or "f16"
  /// (tensor cores, warp or warpgroup MMA).
  std::string dtype = "f32";
  std::string out_dtype = "f32"; ///< "f32", "bf16" or "f16"
  /// "none", "bias", or "bias_" and an activation (dsl/Activations.h):
  /// bias_relu, bias_gelu, bias_gelu_tanh, bias_sigmoid, bias_silu.
  std::string epilogue = "bias_gelu";
  int64_t M = 0, N = 0, K = 0;
  /// N x K runs on tensor cores only (validate refuses it with f32).
  GemmBLayout b_layout = GemmBLayout::KN;

  /// "4096x4096x4096".
  std::string shape() const;
  /// The class a shape falls back to when the database has no entry for it
  /// exactly: each extent rounded to the nearest power of two (in log
  /// scale, halves up), "~4096x~4096x~4096"; 4000x4100x3000 is in it too.
  std::string shape_class() const;
  /// "bf16->bf16 bias_gelu 4096x4096x4096", and " B nk" after it where B is
  /// stored N x K, for messages.
  std::string str() const;
  bool tensor_cores() const { return dtype != "f32"; }
  /// Throws a UserError naming the field that is not one of the values above
  /// (or a shape that is not positive, or B stored N x K with f32).
  void validate() const;
};

/// The element types of A and B (f32 for "tf32") and of out.
Type gemm_input_type(const GemmProblem &problem);
Type gemm_output_type(const GemmProblem &problem);
/// Whether the epilogue reads the bias.
bool gemm_uses_bias(const GemmProblem &problem);

/// The GPU a result was measured on: the device's name as the driver
/// reports it ("NVIDIA H200") and the target compiled for ("sm_90a").
struct GpuIdentity {
  std::string name;
  std::string sm;
  int sm_count = 132; ///< multiprocessors (the default tiling's choice depends on it)
};

/// Rounds a positive extent to the nearest power of two in log scale.
int64_t nearest_power_of_two(int64_t extent);

} // namespace coalesce
