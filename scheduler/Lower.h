#pragma once
// Lowering: (algorithm, schedule) -> loop nest, as one flat list of passes
// (Lower.cpp). Set COALESCE_DUMP_PASSES=1 to print the IR after each pass.

#include "dsl/Func.h"
#include "scheduler/LoweredFunc.h"
#include "scheduler/ResourceBudget.h"

namespace coalesce {

/// The scheduled loop nest with serial semantics, as a user reads it:
/// multi-dimensional accesses, unrolled loops still loops.
Stmt lower_loop_nest(const Func &output, const ResourceBudget &budget = {});

/// The arguments of the lowered function: inputs (by name), the output,
/// then scalar parameters (by name).
std::vector<Argument> lowered_arguments(const Func &output);

/// Ready for the host backend: flat accesses, unrolled loops expanded.
LoweredFunc lower_for_host(const Func &output, const ResourceBudget &budget = {});

/// Ready for the PTX backend: one kernel per nest of gpu_block loops.
/// lower_for_gpu = finish_gpu_program(lower_gpu_nest(...)).
GpuProgram lower_for_gpu(const Func &output, const ResourceBudget &budget = {});

/// The front end and the serial passes, every check included (so an
/// illegal schedule is rejected here); a few milliseconds for a GEMM.
GpuNest lower_gpu_nest(const Func &output, const ResourceBudget &budget = {});
/// lower_gpu_nest without the verifiers of the finished nest (about a third
/// of its time), which only read it: what the PTX cache keys on. A stored
/// kernel's nest passed them when it was compiled, so a hit needs none;
/// the nest keeps its environment (GpuNest::unverified) until
/// verify_gpu_nest or finish_gpu_program runs them.
GpuNest lower_gpu_nest_unverified(const Func &output, const ResourceBudget &budget = {});
/// Runs the verifiers lower_gpu_nest_unverified left out, if it left them.
void verify_gpu_nest(GpuNest &nest);
/// Thread fusion and the finishing passes: the bulk of lowering's time.
/// Verifies a nest that is not yet, first.
GpuProgram finish_gpu_program(const GpuNest &nest);

} // namespace coalesce
