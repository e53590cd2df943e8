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

  Func acc = gemm.acc, out = gemm.out;
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RVar ko("ko"), ki("ki");

  out.tile(gemm.i, gemm.j, bi, bj, ii, jj, options.tile_m, options.tile_n)
      .gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, options.reg_m, options.reg_n)
      .gpu_threads({ti, tj});
  out.fuse_epilogue(acc, bj);
  acc.update()
      .split(gemm.k, ko, ki, options.k_step)
      .reorder({ko, ti, tj, ki, ri, rj})
      .unroll(ki)
      .stage_in_shared(gemm.A, ko)
      .stage_in_shared(gemm.B, ko);
}

} // namespace coalesce
