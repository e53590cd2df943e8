#pragma once
// What the GPU check (bench/gpu_check) and the benchmark (bench/harness)
// share about the four precisions of a GEMM: the element types and MMA
// instruction each one uses, the tf32 rounding of the reference, the tile
// sizes of the tensor-core schedule for a shape, and every tolerance with its
// reason. Plain C++ (no CUDA headers), so tests/test_bench_precisions.cpp
// checks it on a machine without a GPU.

#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "dsl/Type.h"
#include "dsl/recipes/GemmMmaSchedule.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::bench {

using reference::Precision;

inline const std::vector<Precision> &all_precisions() {
  static const std::vector<Precision> all = {Precision::FP32, Precision::TF32, Precision::BF16, Precision::F16};
  return all;
}

/// Element type of A and B (f32 for FP32 and TF32) and of the output (f32,
/// or the 16-bit input type, as cuBLAS's reference of the same precision).
inline Type input_type(Precision p) {
  return p == Precision::BF16 ? BFloat(16) : p == Precision::F16 ? Float(16) : Float(32);
}
inline Type output_type(Precision p) { return input_type(p); }

/// The warp MMA instruction of the tensor-core schedule; FP32 has none (its
/// kernels are the FFMA schedule, dsl/recipes/GemmSchedule.h).
inline bool uses_tensor_cores(Precision p) { return p != Precision::FP32; }
/// With `warpgroup`, Hopper's warpgroup MMA (sm_90a only; tf32's B stored
/// transposed, K-major).
inline MmaKind mma_kind(Precision p, bool warpgroup = false) {
  return mma_kind_for(input_type(p), warpgroup);
}
/// Whether precision `p` has a warpgroup MMA schedule.
inline bool has_warpgroup_mma(Precision p) { return p != Precision::FP32; }
/// Whether the benchmark runs precision `p` at M x N x K on the warpgroup
/// MMA (on sm_90a): bf16 and f16 at every shape. Where A's or B's rows are not
/// whole 16-byte vectors, the default tiling copies them first into
/// row-padded workspaces the TMA reads (MmaTiling::tma_padded_copies):
/// bf16 4093x4091x4097 on the H200 took 0.39 ms so with the tuned 4096^3
/// tiling, against 1.23 ms for the warp MMA's element-wise copies.
/// tf32 too: its default warpgroup tiling reads, through the TMA, copies of
/// A and B rounded to tf32 (B transposed) that kernels of their own make
/// first. (Its earlier form, B transposed by every thread's element copies
/// and the tiles rounded in shared memory, took 2.18 ms at 4096^3 on the
/// H200 against 1.44 for the warp MMA's.) But tf32 with few rows of A runs
/// on the warp MMA, as the library's default does (warpgroup_mma_by_default).
inline bool prefers_warpgroup_mma(Precision p, int64_t M, int64_t /*N*/, int64_t /*K*/) {
  return has_warpgroup_mma(p) && warpgroup_mma_by_default(input_type(p), M);
}

/// The non-empty items of a comma-separated list, in order ("a,,b" is a, b).
inline std::vector<std::string> split_list(const std::string &list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (!item.empty())
      items.push_back(item);
  }
  return items;
}

/// Parses "all" or a comma-separated list of fp32, tf32, bf16, f16 (in the
/// order given, without repeats). On a bad name, returns {} and says why.
inline std::vector<Precision> parse_precisions(const std::string &list, std::string *error) {
  std::vector<Precision> result;
  for (const std::string &item : split_list(list)) {
    std::vector<Precision> named;
    if (item == "all")
      named = all_precisions();
    for (Precision p : all_precisions())
      if (item == reference::precision_name(p))
        named.push_back(p);
    if (named.empty()) {
      *error = "unknown precision '" + item + "' (expected fp32, tf32, bf16, f16 or all)";
      return {};
    }
    for (Precision p : named) {
      bool seen = false;
      for (Precision q : result)
        seen = seen || q == p;
      if (!seen)
        result.push_back(p);
    }
  }
  if (result.empty())
    *error = "no precision selected";
  return result;
}

/// The output type's unit roundoff u: rounding to nearest changes a value x
/// by at most u |x|, so the relative (Frobenius) error of a rounded matrix is
/// at most u. u = 2^-p for p significand bits: f32 2^-24, f16 2^-11, bf16
/// 2^-8 (7 stored bits: half an ulp is 2^-9 of a value at the top of its
/// binade and 2^-8 at the bottom).
inline double output_unit_roundoff(Precision p) {
  switch (p) {
  case Precision::BF16:
    return std::ldexp(1.0, -8);
  case Precision::F16:
    return std::ldexp(1.0, -11);
  default:
    return std::ldexp(1.0, -24);
  }
}

/// The comparisons the check and the benchmark make; each has a tolerance on
/// the relative error ||got - want|| / ||want|| over the compared elements.
enum class Comparison {
  OursVsDouble,   ///< our kernel vs the double reference on the exact (tf32: rounded) inputs, K <= ~4096
  OursVsCublas,   ///< our kernel vs cuBLAS's GEMM of the precision with an f32 output, epilogue in double
  CublasVsDouble, ///< that cuBLAS f32-output GEMM vs the double reference (sampled rows)
  GemmVsCublas,   ///< cuBLAS's GEMM with the precision's output vs its f32-output GEMM
  ChainVsCublas,  ///< the cuBLAS chain (GEMM rounded to the output type, then bias + GELU)
  LtVsCublas,     ///< cuBLASLt GELU_BIAS vs the f32-output GEMM with the tanh GELU in double
  OursVsLt,       ///< our erf-GELU kernel vs cuBLASLt's tanh-GELU output directly
};

/// The tolerance of a comparison at precision p, from these parts:
///   - u, the output's unit roundoff, once per rounding to the output type;
///   - f32 accumulation in a different order (blocking, split K, FFMA vs
///     tensor-core sums): 1e-5 against the double reference (K <= ~4096,
///     the error grows like sqrt(K) 2^-24), 1e-4 against cuBLAS, which may
///     split K and whose kernels are not ours;
///   - tf32: cuBLAS may round its f32 inputs to tf32 otherwise than the
///     instruction's round-to-nearest (truncation included), which moves each
///     product by up to 2 tf32 ulps, 2^-9 relative, and the sums by as much
///     where the moves do not cancel; the double reference rounds exactly as
///     our kernel does, so it needs no such allowance;
///   - cuBLASLt's GELU is the tanh form: up to ~5e-4 from erf-GELU in
///     absolute value, under 1e-3 relative to an output's norm.
inline double tolerance(Precision p, Comparison c) {
  const double u = output_unit_roundoff(p);
  const double tf32_inputs = p == Precision::TF32 ? std::ldexp(1.0, -9) : 0.0;
  switch (c) {
  case Comparison::OursVsDouble:
    return u + 1e-5;
  case Comparison::OursVsCublas:
    return u + 1e-4 + tf32_inputs;
  case Comparison::CublasVsDouble:
    return 1e-4 + tf32_inputs;
  case Comparison::GemmVsCublas:
    return u + 1e-4;
  case Comparison::ChainVsCublas:
    // The chain rounds A * B to the output type before bias + GELU: that
    // error (up to u |C|) passes through GELU (slope <= 1.13), whose output
    // has about 1/sqrt(2) of C's norm, then the result is rounded again:
    // 1.13 sqrt(2) u + u < 3u.
    return 3 * u + 1e-4;
  case Comparison::LtVsCublas:
    // One rounding of D, plus one of the bias-added value where cuBLASLt
    // keeps it in the output type.
    return 2 * u + 1e-4;
  case Comparison::OursVsLt:
    return 3 * u + 1e-3 + tf32_inputs;
  }
  return 0;
}

/// COALESCE_BENCH_TF32=truncated: the benchmark's tf32 kernels are the
/// truncating kinds (MmaKind::TF32Truncated_*: f32 bits as the tensor cores
/// read them), and its references truncate the inputs as they do.
inline bool bench_tf32_truncated() {
  const char *form = std::getenv("COALESCE_BENCH_TF32");
  return form && std::string(form) == "truncated";
}

/// COALESCE_BENCH_SPLIT_K_MODE=deterministic|atomic|combine-kernel: the
/// combine the benchmark's split tilings take, to compare (unset or empty:
/// the library's choice). Any other value: nothing, and `error` says why.
inline std::optional<SplitKMode> bench_split_k_mode(std::string *error = nullptr) {
  const char *name = std::getenv("COALESCE_BENCH_SPLIT_K_MODE");
  if (!name || !*name)
    return std::nullopt;
  for (SplitKMode mode : {SplitKMode::Deterministic, SplitKMode::Atomic, SplitKMode::CombineKernel})
    if (std::string(name) == split_k_mode_name(mode))
      return mode;
  if (error)
    *error = std::string("COALESCE_BENCH_SPLIT_K_MODE='") + name +
             "' is no combine: expected deterministic, atomic or combine-kernel";
  return std::nullopt;
}

/// The tensor-core tiling for an M x N problem: the library's shape-aware
/// choice (dsl/recipes/GemmMmaSchedule.h).
inline MmaTiling mma_tiling(Precision p, int64_t M, int64_t N, int sm_count, bool warpgroup = false) {
  return default_mma_tiling(mma_kind(p, warpgroup), M, N, sm_count);
}
/// The same with K known: the reduction split across blocks where the tiles
/// leave multiprocessors idle (default_split_k).
/// `b_nk`: B stored N x K (the copies' rule reads its rows as K long).
inline MmaTiling mma_tiling_for_shape(Precision p, int64_t M, int64_t N, int64_t K, int sm_count,
                                      bool warpgroup = false, bool b_nk = false) {
  return default_mma_tiling(mma_kind(p, warpgroup), M, N, K, sm_count, false, b_nk);
}

/// A bias value every precision's bias vector holds exactly: `x` in [-1, 1)
/// rounded to bf16, and 0 below f16's smallest normal (2^-14), where f16
/// would round it. So our f32 bias and cuBLASLt's bias of the output type
/// (bf16, f16 or f32) are the same numbers.
inline float bias_on_common_grid(float x) {
  x = bf16_bits_to_float(float_to_bf16_bits(x)); // to nearest even, 8 significand bits
  return std::fabs(x) < std::ldexp(1.0f, -14) ? 0.0f : x;
}

} // namespace coalesce::bench
