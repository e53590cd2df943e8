#pragma once
// The NVPTX backend's side of compiling to PTX: its target machine for a
// GpuTarget (with the width of shared-memory pointers chosen per target),
// and NVIDIA's libdevice linked into a module for erf/exp/tanh.

#include "codegen/GpuTarget.h"
#include "scheduler/LoweredFunc.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>

namespace coalesce {

/// The NVPTX triple every GPU module takes.
inline constexpr const char *kNvptxTriple = "nvptx64-nvidia-cuda";
/// The address space of shared memory in NVPTX's LLVM IR.
inline constexpr unsigned kSharedAddressSpace = 3;

/// Whether `program`'s shared-memory (addrspace 3) pointers are 32-bit on
/// `target`: on Hopper targets, for programs with warpgroup MMAs or TMA
/// copies (NvptxTarget.cpp says why only those).
bool short_shared_pointers(const GpuProgram &program, const GpuTarget &target);

/// A new NVPTX target machine for `target` (optimization level aggressive,
/// the target's PTX version), its data layout with 32-bit shared pointers
/// if `short_pointers`, else 64-bit. Thread-safe.
std::unique_ptr<llvm::TargetMachine> nvptx_machine(const GpuTarget &target, bool short_pointers);

/// Links the libdevice functions `module` calls (and nothing else), then
/// makes them internal so they are inlined and their bodies dropped. A
/// missing or unreadable libdevice is a UserError naming the path.
void link_libdevice(llvm::Module &module);

} // namespace coalesce
