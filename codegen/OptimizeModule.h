#pragma once

#include <string>
// The two steps every module goes through between emission and machine code,
// whatever the target: the IR verifier and LLVM's O3 pipeline.

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
/// NVVMReflect on NVPTX). `vectorize` turns the loop and SLP vectorizers on:
/// right for a CPU, pointless for a scalar SIMT thread.
void optimize_module(llvm::Module &module, llvm::TargetMachine &target, bool vectorize);

/// Runs the pass pipeline `passes`, written as opt's -passes option takes it
/// ("function(sroa,instcombine)"), with `target`'s passes and cost models.
void run_pass_pipeline(llvm::Module &module, llvm::TargetMachine &target, const std::string &passes);

} // namespace coalesce
