#pragma once

#include <string>
// The steps a module goes through between emission and machine code: the IR
// verifier, then LLVM's O3 pipeline for a GPU kernel, or the short pipeline
// of a checking run on the host.

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace coalesce {

/// Runs LLVM's verifier; a malformed module is a code generator bug, so a
/// failure is an internal_error carrying the verifier's message. `what`
/// names the module in that message.
void verify_module(const llvm::Module &module, const char *what);

/// Runs the O3 pipeline tuned for `target` (its own passes included, e.g.
/// NVVMReflect on NVPTX), without the loop and SLP vectorizers: pointless
/// for a scalar SIMT thread.
void optimize_module(llvm::Module &module, llvm::TargetMachine &target);

/// The host's pipeline: SROA, early CSE, InstCombine and SimplifyCFG, no
/// loop passes, no vectorizers. The host runs a schedule to check its
/// numbers at small shapes, where compiling costs more than running: on
/// the development machine (coalesce-main on the CPU, compile + run), the
/// bf16 warpgroup-MMA schedule at 64^3 2.29 s with O3 and aggressive code
/// generation, 0.16 s with this and the fast instruction selector; the
/// fp32 default at 256 x 320 x 200 1.30 -> 0.11 s, at 1024 x 1024 x 512
/// 1.37 -> 1.00 s; only at 512^3 on the bf16 schedule is O3 ahead (2.88
/// against 3.09 s).
void optimize_for_checking(llvm::Module &module, llvm::TargetMachine &target);
/// Runs the pass pipeline `passes`, written as opt's -passes option takes it
/// ("function(sroa,instcombine)"), with `target`'s passes and cost models.
void run_pass_pipeline(llvm::Module &module, llvm::TargetMachine &target, const std::string &passes);

} // namespace coalesce
