#pragma once
// The schedule coalesce-aot's `gemm` generator applies, kept in one place so
// that a faster one can replace it without touching the tool: the algorithm
// (GemmAlgorithm) is fixed, the schedule is this file's business.

#include "dsl/Func.h"
#include "scheduler/GemmSchedule.h"

#include <optional>

namespace coalesce {

/// The Funcs, inputs and variables of out(i, j) = epilogue(acc(i, j) [+ bias(j)]),
/// acc(i, j) = sum over k of A(i, k) * B(k, j), as the gemm generator defines them.
struct GemmAlgorithm {
  Func acc, out;
  Input A, B;
  std::optional<Input> bias; ///< absent when the generator has no bias
  Var i, j;                  ///< the pure variables of acc and out (row, column)
  RDom k;                    ///< the reduction over K
};

/// The schedule's knobs; the gemm generator's flags set them.
struct GemmScheduleOptions {
  int tile_m = 128, tile_n = 128; ///< elements of out per thread block
  int reg_m = 8, reg_n = 8;       ///< elements of out per thread, kept in registers
  int k_step = 8;                 ///< K elements of A and B staged in shared memory per step
  int split_k = 1;                ///< blocks the reduction is split across (1: none)
  SplitKMode split_k_mode = SplitKMode::Deterministic;
};

/// Schedules `gemm` for the GPU: a tile_m x tile_n tile of out per block,
/// (tile_m/reg_m) x (tile_n/reg_n) threads each accumulating a reg_m x reg_n
/// register block, A and B staged in shared memory k_step columns/rows at a
/// time, and the epilogue fused after the reduction on the register tile:
///
///   for bi, bj in gpu_block:               # one tile of out
///     for ti, tj in gpu_thread: acc = 0
///     for ko:                              # the reduction, k_step at a time
///       stage A, B tiles in shared; barrier
///       for ti, tj in gpu_thread: for ki, ri, rj (unrolled): acc += A_s * B_s
///     for ti, tj in gpu_thread: for ri, rj: out = epilogue(acc)
///
/// Knobs that do not divide evenly are a UserError naming the flags.
void apply_default_schedule(const GemmAlgorithm &gemm, const GemmScheduleOptions &options);

} // namespace coalesce
