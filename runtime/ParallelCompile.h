#pragma once
// Compiling independent kernels on every core. Each compilation is a
// Pipeline of its own (its own Funcs, its own LLVMContext inside
// compile_to_ptx); what they share is safe to share: LLVM's NVPTX target is
// initialised once (std::call_once), the compile profile is per thread, the
// disk cache writes whole files by rename, and IR nodes are immutable.

#include "codegen/GpuTarget.h"
#include "runtime/Pipeline.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace coalesce {

/// One compilation's result: the PTX, or the error that stopped it.
struct CompileOutcome {
  std::string ptx;
  std::string error; ///< empty on success
  /// The rule or pass that refused it (UserError::rule); "internal" for a
  /// compiler bug; empty on success.
  std::string rule;
  bool ok() const { return error.empty(); }
};

/// The threads to use when a caller asks for 0: one per hardware thread.
int default_compile_threads();

/// Calls job(0) ... job(n - 1) on a fixed pool of `threads` std::threads
/// (0: default_compile_threads()), each index once. job must not throw.
void run_in_parallel(size_t n, int threads, const std::function<void(size_t)> &job);

/// Pipeline::ptx(target) for every pipeline, `threads` at a time; results
/// in input order. An error (an illegal schedule) is that item's outcome and
/// leaves the others alone.
std::vector<CompileOutcome> compile_ptx_in_parallel(std::vector<Pipeline> &pipelines, const GpuTarget &target,
                                                    int threads = 0);

} // namespace coalesce
