#pragma once
// Compiles a GpuProgram to PTX through LLVM's NVPTX backend: one kernel
// (`.entry`) per GpuKernel, GPU indices from the NVVM special registers,
// shared memory in address space 3, erf/exp/tanh from NVIDIA's libdevice,
// `.maxntid` set to the block size so ptxas does not cap registers for a
// 1024-thread block the kernel is never launched with.

#include "codegen/GpuTarget.h"
#include "scheduler/LoweredFunc.h"

#include <string>

namespace coalesce {

/// The PTX text of `program` for `target`: every kernel of the program, each
/// taking every argument of `program.args` (buffers as global pointers,
/// scalars by value) under the name GpuKernel::name. Thread-safe.
std::string compile_to_ptx(const GpuProgram &program, const GpuTarget &target = GpuTarget());

/// compile_to_ptx's PTX with LLVM's assembly comments: each basic-block label
/// followed by the name of the IR block it came from (`// %ko.loop`), loop
/// headers marked. Same instructions; for reading (the stage page,
/// runtime/StagePage.h), never cached.
std::string compile_to_annotated_ptx(const GpuProgram &program, const GpuTarget &target = GpuTarget());

/// The LLVM IR compile_to_ptx would generate PTX from, as text: with
/// libdevice linked and after the O3 pipeline when `optimize`, else as
/// emitted.
std::string emit_gpu_llvm_ir(const GpuProgram &program, const GpuTarget &target = GpuTarget(),
                             bool optimize = true);

} // namespace coalesce
