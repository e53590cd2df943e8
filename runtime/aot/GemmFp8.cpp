#include "runtime/aot/GemmFp8.h"

#include "dsl/Error.h"

#include <cstdlib>

namespace coalesce {

void check_fp8_gemm_flags(const Fp8GemmFlags &flags) {
  const std::string dtype = "--dtype=" + flags.dtype;
  const std::string &sm = flags.target.sm();
  if (!flags.target.has_fp8_conversions())
    user_error(dtype, " --target=", sm, ": ", sm,
               " has no FP8 conversions (PTX has them from sm_89) and no 8-bit tensor-core MMA; the FP8 GEMM runs on "
               "Hopper's warpgroup MMA: give --target=sm_90a");
  if (!flags.target.has_warpgroup_mma())
    user_error(dtype, " --target=", sm,
               ": the FP8 GEMM runs on Hopper's 8-bit warpgroup MMA (wgmma), which only sm_90a has: give "
               "--target=sm_90a");
  if (flags.warp_mma)
    user_error(dtype,
               " --mma=warp: 8-bit floats run on the warpgroup MMA only (no mma.sync reads them): leave --mma out, "
               "or give --mma=warpgroup");
  if (!flags.b_nk)
    user_error(dtype, " with --b=kn", flags.b_given ? "" : " (the default)",
               ": the 8-bit warpgroup MMA reads both operands K-major, so B is stored N x K, as nn.Linear keeps its "
               "weight: give --b=nk");
  // The instruction's k is 32 and a swizzled row holds 128 one-byte
  // elements; schedule_gemm_mma stages whole rows (Stage::mma), so one row
  // is the only k step that meets both.
  if (flags.k_step != 0 && flags.k_step != kFp8KStep)
    user_error("--k-step=", flags.k_step, " with ", dtype,
               ": an FP8 k step is a multiple of the instruction's k (32) and at most one 128-byte swizzled row (",
               kFp8KStep, " elements), and the warpgroup schedule stages whole rows: give --k-step=", kFp8KStep,
               ", or leave it out");
  if (flags.residual)
    user_error("--residual with ", dtype,
               ": the FP8 GEMM's epilogue takes scales (--scales), a bias and an activation, not a residual: leave "
               "--residual out");
  if (flags.tuning)
    user_error("--tuning-db and --autotune cover f32, tf32, bf16 and f16 inputs, not ", dtype,
               ": leave them out (the FP8 tiling is the library's default for the shape, or the knob flags')");
}

} // namespace coalesce
