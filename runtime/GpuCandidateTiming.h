#pragma once
// The autotuner's timing steps on the current GPU (runtime/Autotune.h):
// random inputs for the problem's shape (fixed seeds), and for each
// candidate a numerical check, then a timing:
//   prepare: the module loaded (the driver's JIT), on the compile threads;
//   rank:    output poisoned (NaN), one run, 16 rows spread over the output
//            compared with a double-precision reference (the epilogue
//            included) at the precision's tolerance; then quick_timing();
//   confirm: benchmark_timing(), the benchmark's full protocol.
// Needs a GPU: gpu::GpuUnavailable (a UserError) otherwise.

#include "runtime/Autotune.h"
#include "runtime/TuningProblem.h"

namespace coalesce {

TimingSteps gpu_timing_steps(const GemmProblem &problem);

/// The current GPU: its name, target_for_current_device() and its
/// multiprocessor count.
GpuIdentity current_gpu_identity();

/// ||ours - ref|| / ||ref|| above which a candidate's result is wrong: FP32
/// sums of K products; tf32 inputs are rounded to 11 significant bits
/// (2^-10); a 16-bit output, twice its rounding (2^-8 for bf16, 2^-10 for
/// f16).
double tuning_tolerance(const GemmProblem &problem);

} // namespace coalesce
