#include "runtime/aot/GemmSwiGlu.h"

#include "dsl/Error.h"


namespace coalesce {

void check_swiglu_gemm_flags(const SwiGluGemmFlags &flags) {
  const std::string swiglu = "--epilogue=swiglu";
  if (flags.dtype != "bf16" && flags.dtype != "f16")
    user_error(swiglu, " with --dtype=", flags.dtype, flags.dtype_given ? "" : " (the default)",
               ": the SwiGLU runs on the warpgroup MMA with 16-bit inputs: give --dtype=bf16 or --dtype=f16");
  const std::string &sm = flags.target.sm();
  if (!flags.target.has_warpgroup_mma())
    user_error(swiglu, " --target=", sm,
               ": the SwiGLU runs on Hopper's warpgroup MMA (wgmma), which only sm_90a has: give --target=sm_90a");
  // Both sums' accumulators stay in registers: on the warp MMA's default
  // 64 x 64 warp tiles that is 2 x 128 f32 per thread, which ptxas spills.
  if (flags.warp_mma)
    user_error(swiglu, " --mma=warp: the warp MMA's tiling would hold both sums' accumulators, 2 x 128 f32 per "
                       "thread, and ptxas spills them; the SwiGLU runs on the warpgroup MMA: leave --mma out, or give "
                       "--mma=warpgroup");
  const std::string epilogue = " with " + swiglu + ": the SwiGLU's epilogue is silu(g) * u, ";
  if (flags.bias)
    user_error("--bias", epilogue, "with no bias: leave --bias out");
  if (!flags.activation.empty())
    user_error("--activation=", flags.activation, epilogue,
               "its activation silu on the gate g, fixed: leave --activation out");
  if (flags.residual)
    user_error("--residual", epilogue, "with no residual: leave --residual out");
  if (!flags.scales.empty())
    user_error("--scales=", flags.scales, " with ", swiglu,
               ": scales multiply the sums of 8-bit inputs, and the SwiGLU takes bf16 or f16: leave --scales out");
  if (flags.b_kn)
    user_error("--b=kn with ", swiglu,
               ": Wg and Wu are stored N x K, as nn.Linear keeps its weights: leave --b out, or give --b=nk");
  if (flags.split_k != 1)
    user_error("--split-k=", flags.split_k, " with ", swiglu,
               ": two fused sums are not split across blocks (schedule_fused_gemms_mma): leave --split-k out");
  if (flags.split_k_mode)
    user_error("--split-k-mode with ", swiglu, ": the SwiGLU's reduction is not split: leave --split-k-mode out");
  if (flags.tuning)
    user_error("--tuning-db and --autotune with ", swiglu,
               ": they tune single GEMMs; the SwiGLU's tiling is default_fused_gemms_tiling's (or the knob flags'): "
               "leave them out");
  if (flags.swap_ab)
    user_error("--swap-ab with ", swiglu,
               ": the single GEMM's decode rule; the SwiGLU's two sums keep x's rows along the instruction's M: "
               "leave --swap-ab out");
}

} // namespace coalesce
