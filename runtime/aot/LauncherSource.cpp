#include "runtime/aot/LauncherSource.h"

#include "runtime/aot/CppExpression.h"
#include "runtime/aot/LauncherChecks.h"
#include "runtime/aot/LauncherTensorMaps.h"

#include "codegen/Symbols.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/Input.h"
#include "dsl/Limits.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace coalesce {

using namespace launcher_text;

std::string launcher_source(const LauncherSpec &spec) {
  std::vector<LauncherArg> args = launcher_args(spec);
  const std::vector<const Argument *> workspaces = workspace_args(spec);
  const bool has_workspace = !workspaces.empty();
  const std::string &name = spec.name;
  const std::string &sm = spec.target.sm();
  const size_t kernels = spec.program.kernels.size();
  COALESCE_INTERNAL_ASSERT(kernels > 0, "a GPU program without kernels");
  std::ostringstream out;

  out << "// " << name << ".cpp: generated ahead of time by Coalesce from generator '" << spec.generator
      << "'; do not edit.\n"
      << "// The launcher declared in " << name << ".h, with the " << sm
      << (spec.cubin.empty() ? " PTX" : " cubin and PTX") << " embedded. It needs only the\n"
      << "// CUDA Driver API (cuda.h and libcuda) from CUDA 12 or newer.\n\n"
      << "#include \"" << name << ".h\"\n\n"
      << "#include <algorithm>\n#include <cstdint>\n#include <mutex>\n#include <string>\n\n"
      << "#if !defined(CUDA_VERSION) || CUDA_VERSION < 12000\n"
      << "#error \"" << name << ".cpp needs cuda.h from CUDA 12 or newer (cuLibraryLoadData)\"\n"
      << "#endif\n\n"
      << "namespace {\nnamespace coalesce_launcher {\n\n"
      << "// Every kernel, as PTX for " << sm << " (the same text as " << name << ".ptx), with the\n"
      << "// terminating NUL the driver reads PTX up to.\n"
      << "const unsigned char " << name << "_ptx[] = {\n"
      << byte_array_lines(spec.ptx + std::string(1, '\0'), "    ") << "};\n\n";
  if (!spec.cubin.empty())
    out << "// The same kernels assembled by ptxas for " << sm << " (an ELF cubin): loaded first.\n"
        << "const unsigned char " << name << "_cubin[] = {\n"
        << byte_array_lines(spec.cubin, "    ") << "};\n\n";
  out << "constexpr int kKernels = " << kernels << ";\n"
      << "const char *const kKernelNames[kKernels] = {";
  for (size_t k = 0; k < kernels; ++k)
    out << (k ? ", " : "") << "\"" << kernel_symbol(spec.program.kernels[k].name) << "\"";
  out << "};\n";
  // Kernels over 48 KiB of shared memory take it dynamically, opting in.
  out << "// Dynamic shared memory per kernel (0: its tiles are static).\n"
      << "const int kDynamicShared[kKernels] = {";
  for (size_t k = 0; k < kernels; ++k)
    out << (k ? ", " : "") << dynamic_shared_bytes(spec.program.kernels[k]);
  out << "};\n\n";

  // Only a launcher with a kernel over 48 KiB of shared memory calls the
  // opt-in (so the others need no more of the driver than before).
  bool any_dynamic = false;
  for (const GpuKernel &kernel : spec.program.kernels)
    any_dynamic |= dynamic_shared_bytes(kernel) > 0;
  const std::string dynamic_shared_setup = any_dynamic ? R"cpp(    for (int k = 0; k < kKernels; ++k) {
      if (kDynamicShared[k] <= 48 * 1024)
        continue;
      CUdevice device = 0;
      status = cuCtxGetDevice(&device);
      if (status == CUDA_SUCCESS)
        status = cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kDynamicShared[k], found[k],
                                      device);
      if (status != CUDA_SUCCESS) {
        cuLibraryUnload(library);
        return fail(status, std::string("cannot give kernel '") + kKernelNames[k] + "' " +
                                std::to_string(kDynamicShared[k]) + " bytes of shared memory: " + describe(status));
      }
    }
)cpp" : "";

  // The module: the cubin first when there is one (a driver refuses it on
  // another architecture), else or then the PTX, JIT-compiled.
  const std::string load_ptx =
      "cuLibraryLoadData(&library, " + name + "_ptx, options, values, 2, nullptr, nullptr, 0);\n";
  std::string load_module;
  if (spec.cubin.empty()) {
    load_module = "    const char *cubin_refused = \"\";\n"
                  "    CUresult status = " + load_ptx;
  } else {
    load_module = "    const char *cubin_refused = \"\";\n"
                  "    CUresult status = cuLibraryLoadData(&library, " + name +
                  "_cubin, nullptr, nullptr, 0, nullptr, nullptr, 0);\n"
                  "    if (status != CUDA_SUCCESS) {\n"
                  "      // Another architecture, or a driver older than the cubin: the PTX.\n"
                  "      cubin_refused = \" after the driver refused the cubin\";\n"
                  "      library = nullptr;\n"
                  "      status = " + load_ptx +
                  "    }\n";
  }
  load_module += "    if (status != CUDA_SUCCESS)\n"
                 "      return fail(status, std::string(\"cannot load the PTX (built for " + sm + ")\") + cubin_refused +\n"
                 "                              \": \" + describe(status) + (log[0] ? std::string(\"\\n\") + log : std::string()));\n";

  out << R"cpp(// The loaded module, shared by every thread and context (a CUlibrary is
// loaded into each context on first use there). A failed load is retried by
// the next call.
struct Module {
  std::mutex mutex;
  CUlibrary library = nullptr;
  CUkernel kernels[kKernels] = {};
};

Module &module() {
  static Module instance;
  return instance;
}

// Why the last call on this thread failed.
thread_local std::string last_error;

CUresult fail(CUresult code, const std::string &why) {
  last_error = ")cpp"
      << name << R"cpp(: " + why;
  return code;
}

std::string describe(CUresult code) {
  const char *error_name = nullptr;
  const char *error_text = nullptr;
  if (cuGetErrorName(code, &error_name) != CUDA_SUCCESS || !error_name)
    return "CUDA error " + std::to_string(static_cast<int>(code));
  std::string description = error_name;
  if (cuGetErrorString(code, &error_text) == CUDA_SUCCESS && error_text)
    description += std::string(" (") + error_text + ")";
  return description;
}

// a * b for a, b >= 0, or INT64_MAX where that overflows.
int64_t times(int64_t a, int64_t b) { return a != 0 && b > INT64_MAX / a ? INT64_MAX : a * b; }
// Used by views only (their reach).
[[maybe_unused]] int64_t plus(int64_t a, int64_t b) { return b > INT64_MAX - a ? INT64_MAX : a + b; }

// Used by output views only: "" where the view's elements are distinct,
// else why they may not be. Two elements at one address would be stored in
// an order the kernel chooses. Each stride, in increasing order, must step
// past all that the smaller ones span (1 + their (extent - 1) * stride);
// dimensions of one element step nowhere, and an empty view stores nothing.
// `dims` holds {stride, extent} per dimension; it is sorted in place.
template <std::size_t N> std::string overlapping_view(int64_t (&dims)[N][2]) {
  for (const auto &dim : dims)
    if (dim[1] <= 0)
      return "";
  for (std::size_t d = 1; d < N; ++d) // by stride, smallest first
    for (std::size_t e = d; e > 0 && dims[e][0] < dims[e - 1][0]; --e) {
      std::swap(dims[e][0], dims[e - 1][0]);
      std::swap(dims[e][1], dims[e - 1][1]);
    }
  int64_t span = 1;
  for (const auto &dim : dims) {
    if (dim[1] == 1)
      continue;
    if (span > 1 && dim[0] < span)
      return "a stride of " + std::to_string(dim[0]) + " steps less than the " + std::to_string(span) +
             " elements the smaller strides span";
    span = plus(span, times(dim[1] - 1, dim[0]));
  }
  return "";
}

// The kernels, loading the module first if no call has yet.
CUresult load(CUkernel *kernels) {
  Module &loaded = module();
  std::lock_guard<std::mutex> lock(loaded.mutex);
  if (!loaded.library) {
    char log[8192] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log)))};
    CUlibrary library = nullptr;
)cpp" << load_module
      << R"cpp(
    CUkernel found[kKernels] = {};
    for (int k = 0; k < kKernels; ++k) {
      status = cuLibraryGetKernel(&found[k], library, kKernelNames[k]);
      if (status != CUDA_SUCCESS) {
        cuLibraryUnload(library);
        return fail(status, std::string("cannot find kernel '") + kKernelNames[k] +
                                "' in the PTX: " + describe(status));
      }
    }
)cpp" << dynamic_shared_setup
      << R"cpp(    std::copy(found, found + kKernels, loaded.kernels);
    loaded.library = library;
  }
  std::copy(loaded.kernels, loaded.kernels + kKernels, kernels);
  return CUDA_SUCCESS;
}

} // namespace coalesce_launcher
} // namespace

)cpp";

  out << "const char *" << name << "_error_message(void) {\n"
      << "  return coalesce_launcher::last_error.c_str();\n}\n\n"
      << "CUresult " << name << "_load(void) {\n"
      << "  coalesce_launcher::last_error.clear();\n"
      << "  CUkernel kernels_[coalesce_launcher::kKernels];\n"
      << "  return coalesce_launcher::load(kernels_);\n}\n\n";

  if (has_workspace) {
    out << workspace_signature(name, args) << " {\n";
    for (const LauncherArg &arg : args)
      if (!arg.is_buffer())
        out << "  (void)" << arg.name << "; // the workspace may not depend on every size\n";
    out << workspace_layout(workspaces, false);
    out << "  return size_t(offset_);\n}\n\n";
  }

  out << signature(name, args, has_workspace) << " {\n"
      << "  coalesce_launcher::last_error.clear();\n\n"
      << "\n  // Sizes: zero or more, and those fixed when generating as generated.\n";
  out << argument_checks(spec, args);

  out << "\n  // The grid of each kernel, from the sizes.\n";
  for (size_t k = 0; k < kernels; ++k) {
    const GpuKernel &kernel = spec.program.kernels[k];
    std::string grid = "grid" + std::to_string(k) + "_";
    out << "  const int64_t " << grid << "[3] = {" << cpp_int(kernel.grid[0]) << ",\n"
        << "                               " << cpp_int(kernel.grid[1]) << ",\n"
        << "                               " << cpp_int(kernel.grid[2]) << "};\n"
        << "  if (" << grid << "[0] < 0 || " << grid << "[0] > INT32_MAX || " << grid
        << "[1] < 0 || " << grid << "[1] > 65535 ||\n"
        << "      " << grid << "[2] < 0 || " << grid << "[2] > 65535)\n"
        << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"kernel '" << kernel.name
        << "' would need a grid of (\" + std::to_string(" << grid
        << "[0]) + \", \" +\n"
        << "                std::to_string(" << grid << "[1]) + \", \" + std::to_string(" << grid
        << "[2]) + \") blocks, beyond what a GPU launches\");\n";
  }

  out << R"cpp(
  CUcontext context_ = nullptr;
  CUresult status_ = cuCtxGetCurrent(&context_);
  if (status_ != CUDA_SUCCESS)
    return coalesce_launcher::fail(status_, "no CUDA context: " + coalesce_launcher::describe(status_) +
                             " (call cuInit and make a context current first)");
  if (!context_)
    return coalesce_launcher::fail(CUDA_ERROR_INVALID_CONTEXT,
                "no CUDA context is current on this thread (make one current first, e.g. with "
                "cuDevicePrimaryCtxRetain and cuCtxSetCurrent)");
  CUkernel kernels_[coalesce_launcher::kKernels];
  status_ = coalesce_launcher::load(kernels_);
  if (status_ != CUDA_SUCCESS)
    return status_;

)cpp";

  out << "  // The kernels' parameters, in the program's order: buffers, then i32 scalars.\n";
  std::string params;
  size_t next_workspace = 0;
  for (const Argument &arg : spec.program.args) {
    if (arg.is_workspace) {
      params += (params.empty() ? "" : ", ") + ("&workspace" + std::to_string(next_workspace++) + "_");
      continue;
    }
    if (arg.is_buffer()) {
      params += (params.empty() ? "" : ", ") + ("&" + arg.name);
      continue;
    }
    const LauncherArg *size = find_arg(args, arg.name);
    COALESCE_INTERNAL_ASSERT(size != nullptr, "no launcher argument for scalar ", arg.name);
    out << "  int32_t " << arg.name << "_value_ = " << arg.name << ";\n";
    params += (params.empty() ? "" : ", ") + ("&" + arg.name + "_value_");
  }
  out << "  void *params_[] = {" << params << "};\n";
  // Before any launch, so that nothing is written half-way.
  for (size_t k = 0; k < kernels; ++k)
    for (const auto &[buffer, bytes] : spec.program.kernels[k].aligned_buffers)
      out << "  if (" << buffer << " % " << bytes << " != 0)\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << buffer << " is not " << bytes
          << "-byte aligned; the kernel accesses it in " << bytes << "-byte vectors\");\n";
  bool all_take_maps = true;
  for (size_t k = 0; k < kernels; ++k) {
    out << tensor_map_setup(spec, k, params);
    all_take_maps &= !spec.program.kernels[k].tensor_maps.empty();
  }
  if (all_take_maps)
    out << "  (void)params_; // every kernel takes its own, with its tensor maps\n";

  for (size_t k = 0; k < kernels; ++k) {
    const GpuKernel &kernel = spec.program.kernels[k];
    std::string grid = "grid" + std::to_string(k) + "_";
    std::string kernel_params = kernel.tensor_maps.empty() ? "params_" : str_cat("params", k, "_");
    // An empty grid (M = 0 or N = 0) has nothing to compute: no launch (the
    // driver rejects a grid of 0 blocks).
    out << "\n  if (" << grid << "[0] > 0 && " << grid << "[1] > 0 && " << grid << "[2] > 0) {\n"
        << "  status_ = cuLaunchKernel(reinterpret_cast<CUfunction>(kernels_[" << k << "]),\n"
        << "                           unsigned(" << grid << "[0]), unsigned(" << grid
        << "[1]), unsigned(" << grid << "[2]),\n"
        << "                           " << kernel.block[0] << ", " << kernel.block[1] << ", "
        << kernel.block[2] << ", " << dynamic_shared_bytes(kernel) << ", stream, " << kernel_params
        << ", nullptr);\n"
        << "  if (status_ != CUDA_SUCCESS)\n"
        << "    return coalesce_launcher::fail(status_, \"cannot launch kernel '" << kernel.name
        << "': \" + coalesce_launcher::describe(status_));\n"
        << "  }\n";
  }
  out << "  return CUDA_SUCCESS;\n}\n";
  return out.str();
}

} // namespace coalesce
