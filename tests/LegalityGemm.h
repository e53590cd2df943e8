#pragma once
// What the legality tests share (test_legality.cpp, test_legality_placement.cpp):
// a small GEMM with a relu epilogue, its CPU and fused GPU schedules, and
// lowering it as the library does before code generation.

#include "dsl/Activations.h"
#include "dsl/Func.h"
#include "scheduler/Lower.h"

namespace coalesce::testing {

// C = relu(A*B + bias) as two Funcs: the reduction `acc` and the epilogue `out`.
struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func acc{"acc"}, out{"out"};

  Gemm() {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = relu(acc(i, j) + bias(j));
  }

  // A CPU schedule: acc computed per 2 x 2 tile of out, in registers.
  void schedule_tiles() {
    out.tile(i, j, bi, bj, ii, jj, 2, 2);
    acc.compute_at(out, bj);
  }

  // The fused GPU schedule: tile x tile blocks, rb x rb register blocks, K
  // staged kstep at a time (A and B in shared memory).
  void schedule_fused(int tile, int rb, int kstep, bool stage = true) {
    schedule_fused(tile, tile, rb, rb, kstep, stage);
  }
  void schedule_fused(int tile_i, int tile_j, int rb_i, int rb_j, int kstep, bool stage) {
    out.tile(i, j, bi, bj, ii, jj, tile_i, tile_j)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, rb_i, rb_j)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update().split(k, ko, ki, kstep).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
    if (stage)
      acc.update().stage_in_shared(A, ko).stage_in_shared(B, ko);
  }
};

inline void lower(const Func &out, const ResourceBudget &budget = {}) { lower_loop_nest(out, budget); }

} // namespace coalesce::testing
