#pragma once
// The refusal of programs that use a form no GPU has run yet
// (scheduler/UnverifiedFeatures.h): a UserError naming the form, before
// anything is loaded or written, unless COALESCE_ALLOW_UNVERIFIED=1, which
// coalesce-gpu-check sets to check them.

#include "scheduler/LoweredFunc.h"

#include <string>

namespace coalesce {

/// Refuses `program` if it uses an unverified form; `action` says what was
/// asked ("run on the GPU", "write a launcher").
void refuse_unverified_on_gpu(const GpuProgram &program, const std::string &action);

} // namespace coalesce
