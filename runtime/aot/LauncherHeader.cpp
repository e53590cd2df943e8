#include "runtime/aot/LauncherArgs.h"

#include "codegen/Symbols.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"

#include <algorithm>
#include <sstream>

namespace coalesce {

using namespace launcher_text;

std::string launcher_header(const LauncherSpec &spec) {
  std::vector<LauncherArg> args = launcher_args(spec);
  const bool has_workspace = !workspace_args(spec).empty();
  const std::string &name = spec.name;
  std::ostringstream out;
  out << "// " << name << ".h: generated ahead of time by Coalesce from generator '" << spec.generator
      << "'; do not edit.\n"
      << "// " << spec.description << "\n"
      << "// Regenerate with:\n"
      << "//   " << spec.command_line << "\n"
      << "//\n"
      << "// " << name << "(...) launches the computation on `stream` (asynchronously; 0 is\n"
      << "// the default stream) in the CUDA context current on the calling thread.\n"
      << "//\n"
      << "// Buffers, in argument order: device memory (CUdeviceptr), row-major (the last\n"
      << "// index is contiguous, no padding between rows):\n";
  size_t width = 0;
  for (const LauncherArg &arg : args)
    width = std::max(width, arg.name.size());
  for (const LauncherArg &arg : args)
    if (arg.is_buffer())
      out << "//   " << pad(arg.name, width + 1) << (arg.buffer->is_output ? "output " : "input  ") << arg.buffer->type
          << " " << extents_text(*arg.buffer) << view_text(*arg.buffer) << "\n";
  out << "// Sizes, in argument order after the buffers (each in [0, 2^30], and each buffer\n"
      << "// at most 2^30 elements, since the kernels index with 32-bit integers). A size\n"
      << "// of 0 is accepted where the pipeline accepts it: where it empties the output\n"
      << "// (nothing is launched) or a reduction (K = 0: the epilogue of the initial value,\n"
      << "// as cuBLAS computes it). An empty buffer may be a null pointer:\n";
  for (const LauncherArg &arg : args) {
    if (arg.is_buffer())
      continue;
    out << "//   " << pad(arg.name, width + 1)
        << (arg.size.fixed ? "fixed at " + std::to_string(*arg.size.fixed) + " (any other value is rejected)"
                           : std::string("passed at run time"));
    if (!arg.size.help.empty())
      out << ": " << arg.size.help;
    out << "\n";
  }
  if (has_workspace)
    out << "// workspace: scratch device memory of " << name << "_workspace_bytes(sizes) bytes\n"
        << "// (the K split's partial sums and per-tile arrival counters, the row-padded\n"
        << "// copies the TMA reads), allocated by the caller and zeroed once (cuMemsetD8)\n"
        << "// before its first use. Every launch leaves the counters (and an atomic split's\n"
        << "// sums) zeroed again and rewrites the other parts whole before it reads them,\n"
        << "// so it is reused as is: no allocation or\n"
        << "// clearing per call.\n"
        << "// Launches that share one workspace must not run at the same time (one stream).\n";
  out << "// Launches, in order, on `stream`:\n";
  for (const GpuKernel &kernel : spec.program.kernels)
    out << "//   kernel '" << kernel.name << "': grid " << grid_text(kernel) << " blocks of " << block_text(kernel)
        << " threads, " << kernel.shared_bytes << " bytes of static shared memory\n";
  if (spec.cubin.empty())
    out << "// Target: " << spec.target.sm() << ". The PTX (also in " << name << ".ptx) is embedded in " << name
        << ".cpp and\n"
        << "// JIT-compiled by the driver on first use; it needs a GPU of that architecture and a\n"
        << "// CUDA 12 or newer driver.\n";
  else
    out << "// Target: " << spec.target.sm() << ". " << name << ".cpp embeds the kernels assembled for it by\n"
        << "// ptxas (a cubin), loaded on first use, and their PTX (also in " << name << ".ptx), which\n"
        << "// the driver JIT-compiles instead if it refuses the cubin (another GPU). It needs a\n"
        << "// GPU of that architecture and a CUDA 12 or newer driver.\n";
  out << "// Kernels are named after the launcher (" << kernel_symbol(spec.program.kernels.front().name)
      << (spec.program.kernels.size() > 1 ? ", ..." : "") << "), as a profiler shows them.\n"
      << "//\n"
      << "// Returns CUDA_SUCCESS; CUDA_ERROR_INVALID_VALUE for a null pointer or a bad size;\n"
      << "// CUDA_ERROR_INVALID_CONTEXT without a current context; else the driver's error from\n"
      << "// loading or launching. " << name << "_error_message() says why, in words.\n"
      << "// Errors in the kernels themselves surface at the next synchronisation.\n"
      << "//\n"
      << "// Build: the launcher needs only the CUDA Driver API (no LLVM, no Coalesce):\n"
      << "//   g++ -std=c++17 -O2 -c " << name << ".cpp -I/usr/local/cuda/include\n"
      << "//   g++ app.o " << name << ".o -L/usr/local/cuda/lib64 -lcuda\n"
      << "// (link against /usr/local/cuda/lib64/stubs where no driver is installed), or in\n"
      << "// CMake: find_package(CUDAToolkit), add " << name << ".cpp to the target, link CUDA::cuda_driver.\n\n";

  std::string guard = "COALESCE_AOT_" + upper_case(name) + "_H";
  out << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cuda.h>\n#include <stddef.h>\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << element_typedefs(args) << "/// Checks the arguments, loads the module if this is the first call, and\n"
      << "/// launches the kernels on `stream` (see above).\n"
      << signature(name, args, has_workspace) << ";\n\n"
      << "/// Loads and JIT-compiles the module now instead of on the first launch (to\n"
      << "/// keep that out of a timing); needs an initialised driver (cuInit).\n"
      << "CUresult " << name << "_load(void);\n\n";
  if (has_workspace)
    out << "/// Bytes of device memory the `workspace` argument must hold at these sizes.\n"
        << workspace_signature(name, args) << ";\n"
        << "/// Defined where the launcher takes a workspace (split_k, or the TMA's\n"
        << "/// padded copies), so that calling code can follow the signature.\n"
        << "#define " << upper_case(name) << "_TAKES_WORKSPACE 1\n\n";
  out << "/// Why the last call of " << name << " or " << name
      << "_load on this thread failed (\"\" if it succeeded).\n"
      << "const char *" << name << "_error_message(void);\n\n"
      << "#ifdef __cplusplus\n} // extern \"C\"\n#endif\n\n"
      << "#endif // " << guard << "\n";
  return out.str();
}

} // namespace coalesce
