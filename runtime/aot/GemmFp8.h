#pragma once
// coalesce-aot's gemm with 8-bit float inputs (--dtype=e4m3|e5m2): the flags
// an FP8 GEMM cannot take, refused before anything is compiled, and the
// opt-in its launcher needs until it has run on a GPU. The algorithm is the
// FP8 linear layer of examples/Fp8Linear.h (one definition for the tests,
// the GPU check, the FP8 benchmark and this tool), on the warpgroup MMA's
// schedule (schedule_gemm_mma).

#include "codegen/GpuTarget.h"

#include <string>

namespace coalesce {

/// The k step of every FP8 warpgroup schedule: one 128-byte swizzled row of
/// 8-bit elements, four of the instruction's k (32).
constexpr int kFp8KStep = 128;

/// The flags that decide whether an FP8 GEMM can be generated.
struct Fp8GemmFlags {
  std::string dtype; ///< "e4m3" or "e5m2", as given
  GpuTarget target;
  bool b_nk = false;     ///< --b=nk
  bool b_given = false;  ///< --b given (else kn, the default)
  bool warp_mma = false; ///< --mma=warp
  int k_step = 0;        ///< --k-step; 0: the tiling's
  bool residual = false; ///< --residual
  bool tuning = false;   ///< --tuning-db or --autotune
};

/// A UserError naming the flags, for the first combination an FP8 GEMM
/// cannot take: a target without FP8 conversions (sm_80, sm_86) or without
/// the 8-bit warpgroup MMA (anything but sm_90a), --mma=warp, B stored
/// K x N, a k step other than one swizzled row, a residual, a tuning
/// database or the autotuner.
void check_fp8_gemm_flags(const Fp8GemmFlags &flags);


} // namespace coalesce
