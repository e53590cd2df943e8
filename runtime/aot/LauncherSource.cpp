#include "runtime/aot/LauncherSource.h"

#include "runtime/aot/CppExpression.h"
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

namespace {

// ------------------------------------------------------------ argument list

/// One argument of the launcher, in signature order (the stream is last).
struct LauncherArg {
  std::string name;
  const Argument *buffer = nullptr; ///< set for a buffer
  LauncherSize size;                ///< for a size
  bool is_buffer() const { return buffer != nullptr; }
};

const char *const kCppKeywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char16_t", "char32_t", "class", "compl", "const", "constexpr",
    "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert",
    "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try",
    "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq", "restrict", "std", "stream"};

} // namespace

bool is_cpp_keyword(const std::string &name) {
  return std::find(std::begin(kCppKeywords), std::end(kCppKeywords), name) != std::end(kCppKeywords) &&
         name != "std" && name != "stream";
}

namespace {

bool is_identifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool starts_with(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A buffer or size name must be usable as a parameter name of the launcher
/// without shadowing what the launcher's body uses: its helpers (namespace
/// coalesce_launcher), its locals (trailing _), std, the CUDA API (cu*, CU*)
/// and the <cstdint> names (*_t, INT*_MAX).
void check_argument_name(const std::string &name, const std::string &what) {
  bool reserved = std::find(std::begin(kCppKeywords), std::end(kCppKeywords), name) !=
                      std::end(kCppKeywords) ||
                  starts_with(name, "coalesce") || starts_with(name, "cu") ||
                  starts_with(name, "CU") || starts_with(name, "INT") || ends_with(name, "_") ||
                  ends_with(name, "_t");
  if (!is_identifier(name) || reserved)
    user_error("the ", what, " '", name,
               "' cannot name a parameter of the generated launcher: use a C identifier that is "
               "not a C++ keyword, not 'stream' or 'std', does not start with 'coalesce', 'cu', "
               "'CU' or 'INT', and does not end in '_' or '_t'");
}

const LauncherArg *find_arg(const std::vector<LauncherArg> &args, const std::string &name) {
  for (const LauncherArg &arg : args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

std::vector<LauncherArg> launcher_args(const LauncherSpec &spec) {
  std::vector<LauncherArg> args;
  auto is_input = [](const Argument &arg) { return arg.is_buffer() && !arg.is_workspace && !arg.is_output; };
  // The inputs the generator orders first, then the others and the output
  // in the program's order (the kernels' parameters keep it).
  for (const std::string &name : spec.inputs) {
    auto input = std::find_if(spec.program.args.begin(), spec.program.args.end(),
                              [&](const Argument &arg) { return is_input(arg) && arg.name == name; });
    if (input == spec.program.args.end())
      user_error("the generator orders the launcher's inputs with '", name,
                 "', which is no input of the pipeline; order only the inputs it reads");
    if (find_arg(args, name) == nullptr) {
      check_argument_name(name, "input");
      args.push_back({name, &*input, {}});
    }
  }
  for (const Argument &arg : spec.program.args)
    if (arg.is_buffer() && !arg.is_workspace && find_arg(args, arg.name) == nullptr) {
      check_argument_name(arg.name, arg.is_output ? "output Func" : "input");
      args.push_back({arg.name, &arg, {}});
    }
  for (const LauncherSize &size : spec.sizes) {
    check_argument_name(size.name, "size");
    args.push_back({size.name, nullptr, size});
  }
  for (const Argument &arg : spec.program.args) {
    if (arg.is_buffer())
      continue;
    if (arg.type != Int(32))
      user_error("scalar parameter '", arg.name, "' is ", arg.type,
                 "; the launcher passes only i32 sizes");
    bool listed = std::any_of(spec.sizes.begin(), spec.sizes.end(),
                              [&](const LauncherSize &size) { return size.name == arg.name; });
    if (listed)
      continue;
    check_argument_name(arg.name, "scalar parameter");
    args.push_back({arg.name, nullptr, LauncherSize{arg.name, "", std::nullopt}});
  }
  for (size_t a = 0; a < args.size(); ++a)
    for (size_t b = a + 1; b < args.size(); ++b)
      if (args[a].name == args[b].name)
        user_error("two arguments of the launcher are called '", args[a].name,
                   "': rename the input, Func or size");
  return args;
}

/// "[M][K]"
std::string extents_text(const Argument &buffer) {
  std::string text;
  for (const Expr &extent : buffer.extents)
    text += "[" + to_string(extent) + "]";
  return text.empty() ? "(a scalar)" : text;
}

/// " (a view: strides lda x 1)", " (column-major: strides 1 x M)" for an
/// output whose columns are contiguous, or "" for a dense buffer; for the
/// header.
std::string view_text(const Argument &buffer) {
  if (buffer.strides.empty())
    return "";
  const bool column_major = contiguous_dimension(buffer.strides) + 1 != buffer.strides.size();
  std::string text = column_major ? " (column-major: strides" : " (a view: strides";
  for (size_t d = 0; d < buffer.strides.size(); ++d)
    text += (d ? " x " : " ") + to_string(buffer.strides[d]);
  return text + ")";
}

/// "M*K", for messages about element counts.
std::string elements_text(const Argument &buffer) {
  std::string text;
  for (const Expr &extent : buffer.extents)
    text += (text.empty() ? "" : "*") + to_string(extent);
  return text;
}

// ---------------------------------------------------------------- text

/// `bytes` as the initializer of an unsigned char array: 16 per line,
/// each line after `indent`. A byte array, unlike one string literal, has
/// no length limit a compiler may impose (C++ asks only 65,536 characters
/// of a literal) and holds a binary cubin as well as text.
std::string byte_array_lines(const std::string &bytes, const std::string &indent) {
  std::string out;
  char hex[8];
  for (size_t b = 0; b < bytes.size(); ++b) {
    out += b % 16 == 0 ? (b ? ",\n" : "") + indent : ", ";
    std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned char>(bytes[b]));
    out += hex;
  }
  return out;
}

/// `text` inside a C string literal: quotes and backslashes escaped.
std::string escaped(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out;
}

std::string upper_case(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

/// The C type of a device pointer to elements of `type`: CUdeviceptr for
/// f32; for a 16-bit or 8-bit float, a typedef of CUdeviceptr named after
/// what it points to (declared in the header by element_typedefs()).
std::string device_pointer_type(Type type) {
  if (type == BFloat(16))
    return "coalesce_bf16_deviceptr";
  if (type == Float(16))
    return "coalesce_f16_deviceptr";
  if (type == Float8E4M3())
    return "coalesce_e4m3_deviceptr";
  if (type == Float8E5M2())
    return "coalesce_e5m2_deviceptr";
  if (type != Float(32))
    user_error("buffer of element type ", type, ": a launcher passes f32, bf16, f16, e4m3 and e5m2 buffers only");
  return "CUdeviceptr";
}

/// The typedefs for the narrow buffers among `args`, each guarded so that
/// two generated headers can be included together.
std::string element_typedefs(const std::vector<LauncherArg> &args) {
  struct Typedef {
    Type type;
    const char *what; ///< the comment above it
  };
  const Typedef typedefs[] = {
      {BFloat(16), "bfloat16 elements: 2 bytes each, the upper half of an\n/// IEEE f32 (a uint16_t on the host)"},
      {Float(16), "IEEE half (f16) elements: 2 bytes each (a uint16_t on\n/// the host)"},
      {Float8E4M3(), "FP8 E4M3 (E4M3FN: 4 exponent bits, 3 mantissa bits, no\n/// infinities) elements: 1 byte each, "
                     "sizes and strides in bytes equal to\n/// element counts (a uint8_t on the host)"},
      {Float8E5M2(), "FP8 E5M2 (5 exponent bits, 2 mantissa bits) elements:\n/// 1 byte each, sizes and strides in "
                     "bytes equal to element counts\n/// (a uint8_t on the host)"},
  };
  std::string text;
  for (const Typedef &t : typedefs) {
    bool used = std::any_of(args.begin(), args.end(),
                            [&](const LauncherArg &arg) { return arg.is_buffer() && arg.buffer->type == t.type; });
    if (!used)
      continue;
    std::string name = device_pointer_type(t.type);
    std::string guard = "COALESCE_AOT_" + upper_case(name.substr(std::string("coalesce_").size()));
    text += "/// Device memory holding " + std::string(t.what) + ". A CUdeviceptr, named for what it holds.\n" +
            "#ifndef " + guard + "\n#define " + guard + "\ntypedef CUdeviceptr " + name + ";\n#endif\n\n";
  }
  return text;
}

/// The workspace arguments of a program (split_k), in program order.
std::vector<const Argument *> workspace_args(const LauncherSpec &spec) {
  std::vector<const Argument *> result;
  for (const Argument &arg : spec.program.args)
    if (arg.is_workspace)
      result.push_back(&arg);
  return result;
}

/// "CUresult NAME(CUdeviceptr A, ..., int M, ..., [CUdeviceptr workspace,] CUstream stream)"
std::string signature(const std::string &name, const std::vector<LauncherArg> &args, bool workspace) {
  std::string text = "CUresult " + name + "(";
  std::string indent(text.size(), ' ');
  for (size_t a = 0; a < args.size(); ++a) {
    text += (args[a].is_buffer() ? device_pointer_type(args[a].buffer->type) + " " : std::string("int ")) +
            args[a].name + ",";
    bool break_line = args[a].is_buffer() && a + 1 < args.size() && !args[a + 1].is_buffer();
    text += break_line ? "\n" + indent : " ";
  }
  if (workspace)
    text += "CUdeviceptr workspace, ";
  return text + "CUstream stream)";
}

/// "size_t NAME_workspace_bytes(int M, ...)": the sizes only.
std::string workspace_signature(const std::string &name, const std::vector<LauncherArg> &args) {
  std::string text = "size_t " + name + "_workspace_bytes(";
  bool first = true;
  for (const LauncherArg &arg : args)
    if (!arg.is_buffer()) {
      text += (first ? "int " : ", int ") + arg.name;
      first = false;
    }
  return text + (first ? "void)" : ")");
}

std::string grid_text(const GpuKernel &kernel) {
  return "(" + to_string(kernel.grid[0]) + ", " + to_string(kernel.grid[1]) + ", " +
         to_string(kernel.grid[2]) + ")";
}

std::string block_text(const GpuKernel &kernel) {
  return "(" + std::to_string(kernel.block[0]) + ", " + std::to_string(kernel.block[1]) + ", " +
         std::to_string(kernel.block[2]) + ")";
}

std::string pad(const std::string &text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

} // namespace

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
        << (arg.size.fixed ? "fixed at " + std::to_string(*arg.size.fixed) +
                                 " (any other value is rejected)"
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
    out << "//   kernel '" << kernel.name << "': grid " << grid_text(kernel) << " blocks of "
        << block_text(kernel) << " threads, " << kernel.shared_bytes
        << " bytes of static shared memory\n";
  if (spec.cubin.empty())
    out << "// Target: " << spec.target.sm() << ". The PTX (also in " << name
        << ".ptx) is embedded in " << name << ".cpp and\n"
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
      << "// CMake: find_package(CUDAToolkit), add " << name
      << ".cpp to the target, link CUDA::cuda_driver.\n\n";

  std::string guard = "COALESCE_AOT_" + upper_case(name) + "_H";
  out << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <cuda.h>\n#include <stddef.h>\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << element_typedefs(args)
      << "/// Checks the arguments, loads the module if this is the first call, and\n"
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

  // The workspace: each part at a 256-byte aligned offset, in program order.
  auto workspace_layout = [&](std::ostringstream &text, bool offsets) {
    text << "  int64_t offset_ = 0;\n";
    for (size_t w = 0; w < workspaces.size(); ++w) {
      std::string elements = "int64_t(1)";
      for (const Expr &extent : workspaces[w]->extents)
        elements = "coalesce_launcher::times(" + elements + ", std::max<int64_t>(" + cpp_int(extent) + ", 0))";
      if (offsets)
        text << "  const int64_t workspace" << w << "_offset_ = offset_;\n";
      text << "  const int64_t workspace" << w << "_elements_ = " << elements << ";\n"
           << "  offset_ += (workspace" << w << "_elements_ * " << workspaces[w]->type.bytes() << " + 255) / 256 * 256;\n";
    }
  };
  if (has_workspace) {
    out << workspace_signature(name, args) << " {\n";
    for (const LauncherArg &arg : args)
      if (!arg.is_buffer())
        out << "  (void)" << arg.name << "; // the workspace may not depend on every size\n";
    workspace_layout(out, false);
    out << "  return size_t(offset_);\n}\n\n";
  }

  out << signature(name, args, has_workspace) << " {\n"
      << "  coalesce_launcher::last_error.clear();\n\n"
      << "\n  // Sizes: zero or more, and those fixed when generating as generated.\n";
  for (const LauncherArg &arg : args) {
    if (arg.is_buffer())
      continue;
    const std::string &size = arg.name;
    out << "  if (" << size << " < 0)\n"
        << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << size << " = \" + std::to_string("
        << size << ") + \": sizes must not be negative\");\n"
        << "  if (" << size << " > (1 << 30))\n"
        << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << size << " = \" + std::to_string("
        << size << ") + \": sizes are at most 2^30, since the kernels compute loop bounds in 32 bits\");\n";
    if (arg.size.fixed) {
      std::string fixed = std::to_string(*arg.size.fixed);
      out << "  if (" << size << " != " << fixed << ")\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << size << " = \" + std::to_string("
          << size << ") + \", but this launcher was generated for " << size << " = " << fixed
          << " (--" << size << "=" << fixed << "); regenerate without --" << size
          << " to pass any " << size << "\");\n";
    }
  }

  out << "\n  // The kernels index every buffer with 32-bit integers: at most 2^30 elements\n"
      << "  // (kMaxExtent in dsl/Limits.h), as the JIT checks.\n";
  for (const LauncherArg &arg : args) {
    if (!arg.is_buffer())
      continue;
    std::string elements = "int64_t(1)";
    for (size_t d = 0; d < arg.buffer->extents.size(); ++d)
      elements = d == 0 ? cpp_int(arg.buffer->extents[0])
                        : "coalesce_launcher::times(" + elements + ", " + cpp_int(arg.buffer->extents[d]) + ")";
    std::string local = arg.name + "_elements_";
    if (!arg.buffer->strides.empty()) {
      // A view: the elements from its first to its last, 1 + the sum of
      // (extent - 1) * stride (none when it is empty); strides at least 1.
      std::string empty = "false", reach = "int64_t(1)";
      for (size_t d = 0; d < arg.buffer->extents.size(); ++d) {
        std::string extent = cpp_int(arg.buffer->extents[d]), stride = cpp_int(arg.buffer->strides[d]);
        empty += " || " + extent + " <= 0";
        reach = "coalesce_launcher::plus(" + reach + ", coalesce_launcher::times(" + extent + " - 1, " + stride + "))";
        out << "  if (" << stride << " < 1)\n"
            << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << arg.name << "'s stride "
            << escaped(to_string(arg.buffer->strides[d])) << " is \" + std::to_string(" << stride
            << ") + \"; strides are at least 1\");\n";
      }
      elements = "(" + empty + ") ? int64_t(0) : " + reach;
      if (arg.buffer->is_output) {
        std::string pairs;
        for (size_t d = 0; d < arg.buffer->extents.size(); ++d)
          pairs += std::string(d ? ", " : "") + "{" + cpp_int(arg.buffer->strides[d]) + ", " +
                   cpp_int(arg.buffer->extents[d]) + "}";
        out << "  int64_t " << arg.name << "_dims_[][2] = {" << pairs << "};\n"
            << "  const std::string " << arg.name << "_overlap_ = coalesce_launcher::overlapping_view(" << arg.name
            << "_dims_);\n"
            << "  if (!" << arg.name << "_overlap_.empty())\n"
            << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << arg.name
            << " is a view whose elements overlap (\" + " << arg.name
            << "_overlap_ + \"): two of them would be stored at one address, in an order the kernel chooses; "
               "pass strides that step past each other\");\n";
      }
    }
    out << "  const int64_t " << local << " = " << elements << ";\n"
        << "  if (" << local << " > " << kMaxExtent << ")\n"
        << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << arg.name
        << (arg.buffer->strides.empty() ? " would have " + elements_text(*arg.buffer) + " = "
                                        : std::string(", a view, would reach "))
        << "\" + std::to_string(" << local
        << ") + \" elements; the kernels index with 32-bit integers (at most 2^30 elements)\");\n";
  }

  out << "\n  // Buffers: device pointers, none null unless empty (cuMemAlloc gives no\n"
      << "  // memory for 0 bytes, and an empty buffer is never read).\n";
  for (const LauncherArg &arg : args)
    if (arg.is_buffer())
      out << "  if (" << arg.name << " == 0 && " << arg.name << "_elements_ > 0)\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << arg.name
          << " is a null pointer\");\n";

  if (has_workspace) {
    out << "\n  // The workspace (split_k, padded copies): the caller's, zeroed before its first use.\n";
    workspace_layout(out, true);
    out << "  for (int64_t elements_ : {";
    for (size_t w = 0; w < workspaces.size(); ++w)
      out << (w ? ", " : "") << "workspace" << w << "_elements_";
    out << "})\n"
        << "    if (elements_ > " << kMaxExtent << ")\n"
        << "      return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"the workspace would hold \" + "
           "std::to_string(elements_) + \" elements in one part; the kernels index with 32-bit integers (at most "
           "2^30 elements)\");\n"
        << "  if (workspace == 0 && offset_ > 0)\n"
        << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"workspace is a null pointer; allocate "
        << name << "_workspace_bytes(...) bytes and zero them once\");\n";
    for (size_t w = 0; w < workspaces.size(); ++w)
      out << "  CUdeviceptr workspace" << w << "_ = workspace + CUdeviceptr(workspace" << w << "_offset_);\n";
  }

  const LauncherArg *output = nullptr;
  for (const LauncherArg &arg : args)
    if (arg.is_buffer() && arg.buffer->is_output)
      output = &arg;

  // The rule bind_arguments applies (runtime/Arguments.cpp): an input may be
  // empty only when the output is, or when every definition that reads it
  // runs over an empty reduction range (K = 0: acc keeps its initial value,
  // and the epilogue runs on it).
  if (output) {
    out << "\n  // An empty input only where nothing reads it (K = 0) or the output is empty.\n";
    for (const LauncherArg &arg : args) {
      if (!arg.is_buffer() || arg.buffer->is_output)
        continue;
      std::string unread = "true";
      std::string reader = "nothing";
      for (const InputRead &read : arg.buffer->reads) {
        std::string empty_range = "false";
        for (const Expr &extent : read.reduction_extents)
          empty_range = "(" + empty_range + " || " + cpp_int(extent) + " <= 0)";
        unread = "(" + unread + " && " + empty_range + ")";
        if (reader == "nothing")
          reader = read.site;
      }
      out << "  if (" << arg.name << "_elements_ == 0 && " << output->name << "_elements_ > 0 && !" << unread
          << ")\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << arg.name << " would have "
          << elements_text(*arg.buffer) << " = 0 elements while the output is not empty, and " << escaped(reader)
          << " reads it; an input may be empty only where every definition that reads it runs over an empty "
             "reduction range (K = 0) or the output is empty\");\n";
    }
  }

  // A reduction's extent is zero or positive (bind_arguments' rule): a
  // negative one is no range, and would sum nothing without a word.
  {
    std::vector<std::string> checked;
    for (const LauncherArg &arg : args) {
      if (!arg.is_buffer())
        continue;
      for (const InputRead &read : arg.buffer->reads)
        for (const Expr &extent : read.reduction_extents) {
          std::string value = cpp_int(extent);
          if (std::find(checked.begin(), checked.end(), value) != checked.end())
            continue;
          checked.push_back(value);
          out << "  if (" << value << " < 0)\n"
              << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \""
              << escaped(read.site + "'s reduction would run over " + to_string(extent))
              << " = \" + std::to_string(" << value
              << ") + \" elements; a reduction's extent must be zero or positive: check the sizes\");\n";
        }
    }
  }

  // The kernels write the output while they read the inputs, in an order the
  // schedule chooses: an output sharing memory with an input is rejected.
  if (output) {
    out << "\n  // The output shares no memory with any input.\n";
    auto end_of = [](const LauncherArg &arg) {
      return "(" + arg.name + " + static_cast<CUdeviceptr>(" + arg.name + "_elements_) * " +
             std::to_string(arg.buffer->type.bytes()) + ")";
    };
    for (const LauncherArg &arg : args) {
      if (!arg.is_buffer() || arg.buffer->is_output)
        continue;
      out << "  if (" << arg.name << "_elements_ > 0 && " << output->name << "_elements_ > 0 && " << arg.name
          << " < " << end_of(*output) << " && " << output->name << " < " << end_of(arg) << ")\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"the output " << output->name
          << " overlaps the input " << arg.name
          << " in device memory; pass an output that shares no memory with any input\");\n";
    }
  }

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
