#pragma once
// Lowering pass, right after lower_tma_pipelines: register reallocation
// between the roles of a warp-specialized TMA pipeline
// (ProducerWarps::registers). The producer warps issue copies and need few
// registers; the MMA warps hold the accumulators. At the producers' start
// (ProducerBoundary, left by lower_tma_pipelines) each warpgroup
// reallocates once: the producers give registers back
// (setmaxnreg.dec), the MMA warps take them (setmaxnreg.inc, blocking until
// freed). At the producers' end they leave the kernel (thread_exit), so the
// code after the pipeline (the epilogue) is the MMA warps' alone and ptxas
// can give it their registers (C7507 otherwise), and every barrier after
// it, to the end of its block, counts the MMA warps alone. Where the
// producers have nothing to do (the cp.async fallback) they give their
// registers back and leave at once, so the epilogue is reached with the
// same registers on both branches:
//
//   producer_warps_start    ->  producers: registers_decrease(R)
//                               MMA warps: registers_increase(M)
//   producer_warps_leave    ->  producers: thread_exit(); barrier (the MMA warps) ...
//   producer_warps_idle     ->  producers: registers_decrease(R); thread_exit()
//                               MMA warps: registers_increase(M); barrier (the MMA warps) ...
//
// M is what the launch gives the block (its threads, at the blocks per SM
// the output asks for) less what the producers keep (mma_warp_registers).
// Without reallocation the boundaries are dropped. Refused, naming the
// staging: reallocation with split_k (its last block combines the slices
// behind barriers of the whole block), producers that would leave inside a
// persistent block's tile loop (the next tile needs them), an unknown
// launch (no gpu_min_blocks_per_sm), and a reallocation that gives the
// MMA warps nothing.

#include "scheduler/Environment.h"

namespace coalesce {

/// The most registers per thread the MMA warps take with register
/// reallocation: what the largest accumulators (a 64 x 256 f32 tile per
/// warpgroup, 128 registers) and their operands need, with a margin under
/// the 248 a launch gives at most. Where the launch already gives the MMA
/// warps this many, reallocation is refused: it could give them nothing.
constexpr int kMaxMmaWarpRegisters = 240;

/// The registers per thread the MMA warps take with register reallocation:
/// what the launch gives the block (`launch_registers` per thread, for
/// `block_threads`) less what the producer warpgroup keeps, per MMA
/// thread, down to a multiple of 8 and at most 240.
int mma_warp_registers(int launch_registers, int block_threads, int producer_threads, int producer_registers);

Stmt reallocate_registers(const Stmt &s, const Environment &env);

} // namespace coalesce
