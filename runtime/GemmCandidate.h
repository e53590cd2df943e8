#pragma once
// One way to run a GEMM problem: a schedule family (FFMA, warp MMA,
// Hopper's warpgroup MMA) and the knobs of its recipe (GemmTiling,
// MmaTiling). The autotuner compares candidates; the tuning database stores
// the winner; build_scheduled_gemm turns one into a scheduled Func.

#include "dsl/Func.h"
#include "runtime/TuningProblem.h"
#include "scheduler/GemmMmaSchedule.h"
#include "scheduler/GemmSchedule.h"

#include <string>

namespace coalesce {

enum class GemmFamily { Ffma, WarpMma, WarpgroupMma };

/// "ffma", "warp", "warpgroup".
const char *gemm_family_name(GemmFamily family);

struct GemmCandidate {
  GemmFamily family = GemmFamily::Ffma;
  GemmTiling ffma; ///< the knobs when family is Ffma
  MmaTiling mma;   ///< the knobs otherwise (mma.kind agrees with the family)
  /// The family and the tiling, as GemmTiling/MmaTiling::str() print it.
  std::string str() const;
};

bool operator==(const GemmCandidate &a, const GemmCandidate &b);

/// The MMA instruction of `family` for the problem's dtype; a UserError for
/// a combination without one (f32 on MMA, tf32 on warpgroup MMA).
MmaKind gemm_mma_kind(const GemmProblem &problem, GemmFamily family);

/// The library's choice without tuning: default_gemm_tiling for f32,
/// default_mma_tiling for the others, on the warpgroup MMA for bf16/f16 on
/// sm_90a when N and K are multiples of 8 (whole 16-byte rows to stage).
GemmCandidate default_gemm_candidate(const GemmProblem &problem, const std::string &sm, int sm_count = 132);

/// Schedules out/acc (as schedule_gemm and schedule_gemm_mma expect them)
/// with `candidate`, for a problem of precision problem.dtype. Errors of the
/// recipe are attributed to "schedule_gemm" or "schedule_gemm_mma"
/// (UserError::rule).
void apply_gemm_candidate(const GemmProblem &problem, const GemmCandidate &candidate, Func out, Func acc,
                          const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k);

/// The problem's algorithm, on fresh Funcs (M, N and K run-time parameters,
/// as the main job and the benchmark have them), scheduled with
/// `candidate` (apply_gemm_candidate); returns the output Func.
Func build_scheduled_gemm(const GemmProblem &problem, const GemmCandidate &candidate);

} // namespace coalesce
