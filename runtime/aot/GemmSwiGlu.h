#pragma once
// coalesce-aot's gemm with --epilogue=swiglu: y = out_dtype(silu(x Wg^T) *
// (x Wu^T)), a SwiGLU MLP's gate and up projections in one kernel. The
// algorithm is examples/SwiGlu.h's (one definition for the tests, the GPU
// check and this tool), on schedule_fused_gemms_mma with
// default_fused_gemms_tiling (dsl/recipes/GemmMmaSchedule.h). Here: the
// flags it cannot take, refused before anything is compiled.

#include "codegen/GpuTarget.h"

#include <string>

namespace coalesce {

/// The flags that decide whether a SwiGLU can be generated.
struct SwiGluGemmFlags {
  std::string dtype; ///< --dtype's value ("f32" when left out)
  bool dtype_given = false;
  GpuTarget target;
  bool warp_mma = false;     ///< --mma=warp
  bool b_kn = false;         ///< --b=kn given
  int split_k = 1;           ///< --split-k (0: chosen from the shape)
  bool split_k_mode = false; ///< --split-k-mode given
  bool bias = false;         ///< --bias given (either value)
  std::string activation;    ///< --activation's value where given, else empty
  bool residual = false;     ///< --residual given
  std::string scales;        ///< --scales's value where given, else empty
  bool tuning = false;       ///< --tuning-db or --autotune
  bool swap_ab = false;      ///< --swap-ab given (either value)
};

/// A UserError naming the flags, for the first combination the SwiGLU
/// cannot take: inputs other than bf16 or f16 (f32, the default, tf32, FP8),
/// a target without the warpgroup MMA (anything but sm_90a), --mma=warp, a
/// flag of the single GEMM's epilogue (--bias, --activation, --residual,
/// --scales), B stored K x N, a split reduction, a tuning database or the
/// autotuner.
void check_swiglu_gemm_flags(const SwiGluGemmFlags &flags);

} // namespace coalesce
