#include "scheduler/GemmMmaSchedule.h"

#include "dsl/Error.h"

namespace coalesce {

std::string MmaTiling::str() const {
  return str_cat(mma_kind_name(kind), ", ", block_m, "x", block_n, " tile, ", warp_m, "x", warp_n, " per warp (",
                 warps(), " warps), k step ", k_step, double_buffered ? ", double buffered" : "",
                 min_blocks_per_sm ? str_cat(", ", min_blocks_per_sm, " blocks per SM") : std::string());
}

void schedule_gemm_mma(Func out, Func acc, const Input &A, const Input &B, const Var &i, const Var &j,
                       const RDom &k, const MmaTiling &t) {
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  out.tile(i, j, bi, bj, ii, jj, t.block_m, t.block_n)
      .gpu_blocks({bi, bj})
      .mma_tile(ii, jj, t.kind, t.warp_m, t.warp_n, warp, lane, mi, nj, fi, fj);
  out.fuse_epilogue(acc, bj);
  if (t.min_blocks_per_sm > 0)
    out.gpu_min_blocks_per_sm(t.min_blocks_per_sm);
  // The fragments of a warp read rows g and columns 2t of a tile: with 8
  // elements of padding per row, the 32 lanes of one read hit 32 banks.
  SharedLayout a_layout, b_layout;
  a_layout.padding = t.a_padding;
  b_layout.padding = t.b_padding;
  for (SharedLayout *layout : {&a_layout, &b_layout}) {
    layout->zero_fill = true;
    layout->double_buffered = t.double_buffered;
  }
  RVar ko("ko"), kk("kk");
  acc.update()
      .mma(k, ko, kk, t.k_step)
      .allow_reassociation()
      .stage_in_shared(A, ko, a_layout)
      .stage_in_shared(B, ko, b_layout);
}

} // namespace coalesce
