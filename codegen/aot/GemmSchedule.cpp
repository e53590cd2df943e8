#include "codegen/aot/GemmSchedule.h"

#include "dsl/Error.h"

namespace coalesce {

void apply_default_schedule(const GemmAlgorithm &gemm, const GemmScheduleOptions &options) {
  if (options.tile_m % options.reg_m != 0)
    user_error("--tile-m=", options.tile_m, " is not a multiple of --reg-m=", options.reg_m,
               ": each thread computes reg-m rows of the tile");
  if (options.tile_n % options.reg_n != 0)
    user_error("--tile-n=", options.tile_n, " is not a multiple of --reg-n=", options.reg_n,
               ": each thread computes reg-n columns of the tile");

  // The library's GEMM schedule (scheduler/GemmSchedule.h) with these knobs:
  // double-buffered shared staging, register blocks, the fused epilogue.
  GemmTiling tiling;
  tiling.block_m = options.tile_m;
  tiling.block_n = options.tile_n;
  tiling.threads_m = options.tile_m / options.reg_m;
  tiling.threads_n = options.tile_n / options.reg_n;
  tiling.k_step = options.k_step;
  tiling.split_k = options.split_k;
  tiling.split_k_mode = options.split_k_mode;
  schedule_gemm(gemm.out, gemm.acc, gemm.A, gemm.B, gemm.i, gemm.j, gemm.k, tiling);
}

} // namespace coalesce
