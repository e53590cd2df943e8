#include "runtime/aot/LauncherArgs.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/Input.h"
#include "runtime/aot/CppExpression.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace coalesce {

namespace {

const char *const kCppKeywords[] = {
    "alignas",   "alignof",  "and",      "and_eq",    "asm",          "auto",          "bitand",
    "bitor",     "bool",     "break",    "case",      "catch",        "char",          "char16_t",
    "char32_t",  "class",    "compl",    "const",     "constexpr",    "const_cast",    "continue",
    "decltype",  "default",  "delete",   "do",        "double",       "dynamic_cast",  "else",
    "enum",      "explicit", "export",   "extern",    "false",        "float",         "for",
    "friend",    "goto",     "if",       "inline",    "int",          "long",          "mutable",
    "namespace", "new",      "noexcept", "not",       "not_eq",       "nullptr",       "operator",
    "or",        "or_eq",    "private",  "protected", "public",       "register",      "reinterpret_cast",
    "return",    "short",    "signed",   "sizeof",    "static",       "static_assert", "static_cast",
    "struct",    "switch",   "template", "this",      "thread_local", "throw",         "true",
    "try",       "typedef",  "typeid",   "typename",  "union",        "unsigned",      "using",
    "virtual",   "void",     "volatile", "wchar_t",   "while",        "xor",           "xor_eq",
    "restrict",  "std",      "stream"};

} // namespace

bool is_cpp_keyword(const std::string &name) {
  return std::find(std::begin(kCppKeywords), std::end(kCppKeywords), name) != std::end(kCppKeywords) && name != "std" &&
         name != "stream";
}

namespace {

bool is_identifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool starts_with(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A buffer or size name must be usable as a parameter name of the launcher
/// without shadowing what the launcher's body uses: its helpers (namespace
/// coalesce_launcher), its locals (trailing _), std, the CUDA API (cu*, CU*)
/// and the <cstdint> names (*_t, INT*_MAX).
void check_argument_name(const std::string &name, const std::string &what) {
  bool reserved = std::find(std::begin(kCppKeywords), std::end(kCppKeywords), name) != std::end(kCppKeywords) ||
                  starts_with(name, "coalesce") || starts_with(name, "cu") || starts_with(name, "CU") ||
                  starts_with(name, "INT") || ends_with(name, "_") || ends_with(name, "_t");
  if (!is_identifier(name) || reserved)
    user_error("the ", what, " '", name,
               "' cannot name a parameter of the generated launcher: use a C identifier that is "
               "not a C++ keyword, not 'stream' or 'std', does not start with 'coalesce', 'cu', "
               "'CU' or 'INT', and does not end in '_' or '_t'");
}

} // namespace

namespace launcher_text {

std::string upper_case(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
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
      user_error("scalar parameter '", arg.name, "' is ", arg.type, "; the launcher passes only i32 sizes");
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
        user_error("two arguments of the launcher are called '", args[a].name, "': rename the input, Func or size");
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
  return "(" + to_string(kernel.grid[0]) + ", " + to_string(kernel.grid[1]) + ", " + to_string(kernel.grid[2]) + ")";
}

std::string block_text(const GpuKernel &kernel) {
  return "(" + std::to_string(kernel.block[0]) + ", " + std::to_string(kernel.block[1]) + ", " +
         std::to_string(kernel.block[2]) + ")";
}

std::string pad(const std::string &text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

std::string workspace_layout(const std::vector<const Argument *> &workspaces, bool offsets) {
  std::ostringstream text;
  text << "  int64_t offset_ = 0;\n";
  for (size_t w = 0; w < workspaces.size(); ++w) {
    std::string elements = "int64_t(1)";
    for (const Expr &extent : workspaces[w]->extents)
      elements = "coalesce_launcher::times(" + elements + ", std::max<int64_t>(" + cpp_int(extent) + ", 0))";
    if (offsets)
      text << "  const int64_t workspace" << w << "_offset_ = offset_;\n";
    text << "  const int64_t workspace" << w << "_elements_ = " << elements << ";\n"
         << "  offset_ += (workspace" << w << "_elements_ * " << workspaces[w]->type.bytes()
         << " + 255) / 256 * 256;\n";
  }
  return text.str();
}

} // namespace launcher_text

} // namespace coalesce
