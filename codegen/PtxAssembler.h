#pragma once
// Runs NVIDIA's PTX assembler (ptxas) on generated PTX: it proves the PTX is
// valid for the target, and its -v report is the ground truth for the
// registers, shared memory and spills a kernel really uses.

#include "codegen/GpuTarget.h"

#include <string>
#include <vector>

namespace coalesce {

/// What ptxas reports for one function (a kernel, or a device function that
/// was not inlined). Bytes are per thread except shared_bytes (per block).
struct KernelResources {
  std::string name;
  int registers = 0;
  int barriers = 0;
  int shared_bytes = 0; ///< static shared memory
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

/// The outcome of assembling a PTX module.
struct PtxasResult {
  std::vector<KernelResources> kernels; ///< in the order ptxas reports them
  std::string cubin;                    ///< the assembled binary (SASS, ELF)
  std::string log;                      ///< ptxas's -v output, verbatim
  /// The report for GpuKernel `kernel` ("out", reported under its symbol
  /// "coalesce_out"), or nullptr if ptxas did not mention it.
  const KernelResources *find(const std::string &kernel) const;
  /// ptxas's reports of a potential performance loss (C7507 to C7520:
  /// wgmma serialized, waits or arrives injected, setmaxnreg ignored), a
  /// line each. ptxas prints them as information and assembles anyway; for a
  /// kernel with warpgroup MMAs each one is a slow kernel, which the tests,
  /// the benchmark and coalesce-aot treat as a failure.
  std::vector<std::string> performance_losses() const;
};

/// Whether `ptx` holds warpgroup MMAs: the kernels whose ptxas
/// performance-loss reports are failures.
bool ptx_has_warpgroup_mma(const std::string &ptx);

/// Assembles `ptx` with `ptxas -arch=<target.sm()> -v` (and `extra_flags`,
/// e.g. -lineinfo). An assembler error (bad PTX, wrong target) is a
/// UserError carrying ptxas's message; a missing ptxas is a UserError
/// saying where it was looked for.
PtxasResult assemble_ptx(const std::string &ptx, const GpuTarget &target,
                         const std::vector<std::string> &extra_flags = {});

/// Parses the resource lines of a `ptxas -v` log.
std::vector<KernelResources> parse_ptxas_log(const std::string &log);

/// True if ptxas can be found (tests that need it skip otherwise).
bool ptxas_available();

/// A path inside the CUDA toolkit: under $COALESCE_CUDA_ROOT if set, else
/// under the root the build was configured with (e.g. /usr/local/cuda).
std::string cuda_toolkit_path(const std::string &relative);

/// A CUDA tool ("ptxas", "nvdisasm"): the toolkit's (cuda_toolkit_path)
/// if it is there, else the first on PATH, else "".
std::string find_cuda_tool(const std::string &name);

} // namespace coalesce
