#pragma once
// What a kernel needs of its target, checked before LLVM's NVPTX backend
// sees it: the backend aborts the process on an instruction the target
// lacks, so such a kernel is a UserError naming the kernel, what it uses and
// which targets have it.

#include "codegen/GpuTarget.h"
#include "scheduler/LoweredFunc.h"

namespace coalesce {

/// Refuses warpgroup MMAs, TMA copies and clusters on any target but
/// sm_90a, and conversions to or from the 8-bit floats before sm_89.
void check_target_instructions(const GpuProgram &program, const GpuTarget &target);

} // namespace coalesce
