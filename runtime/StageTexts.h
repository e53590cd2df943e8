#pragma once
// What the stage page shows of a pipeline, gathered from the compiler and
// the CUDA tools: the algorithm as defined, the loop nest, the GPU LLVM IR,
// the PTX, ptxas's report, the SASS, and the kernels' resources (registers,
// spills, shared memory, blocks per multiprocessor, roles). The page itself
// (runtime/StagePage.h) is text processing only.

#include "runtime/StagePage.h"

#include "codegen/GpuTarget.h"
#include "dsl/Func.h"
#include "scheduler/LoweredFunc.h"

#include <string>

namespace coalesce {

/// The inputs' declarations and each Func's definitions, as the algorithm
/// defines them (updates printed with the value they accumulate), producers
/// first.
std::string algorithm_text(const Func &output);

/// The resources of each kernel of `program` from ptxas's report, a line
/// per fact: the kernel's symbol, grid and block, registers, spills,
/// shared memory (static and dynamic), the blocks one multiprocessor holds
/// (and which limit sets it), and the roles its warps take.
std::vector<std::pair<std::string, std::string>> kernel_facts(const GpuProgram &program,
                                                               const std::string &ptxas_log,
                                                               const std::string &loop_nest, const GpuTarget &target);

/// Everything for the page of `program` (its kernels named as they ship)
/// for `target`; `schedule` says how it was scheduled (coalesce-aot's flags),
/// or is empty.
StageTexts gather_stage_texts(const std::string &title, const GpuProgram &program, const std::string &loop_nest,
                              const std::string &algorithm, const std::string &schedule, const GpuTarget &target);

} // namespace coalesce
