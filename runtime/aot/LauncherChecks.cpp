#include "runtime/aot/LauncherChecks.h"

#include "runtime/aot/CppExpression.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/Limits.h"

#include <algorithm>
#include <sstream>

namespace coalesce::launcher_text {

std::string argument_checks(const LauncherSpec &spec, const std::vector<LauncherArg> &args) {
  const std::vector<const Argument *> workspaces = workspace_args(spec);
  const bool has_workspace = !workspaces.empty();
  const std::string &name = spec.name;
  std::ostringstream out;
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
          << size << ") + \", but this launcher was generated for " << size << " = " << fixed << " (--" << size << "="
          << fixed << "); regenerate without --" << size << " to pass any " << size << "\");\n";
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
    out << workspace_layout(workspaces, true);
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
      out << "  if (" << arg.name << "_elements_ == 0 && " << output->name << "_elements_ > 0 && !" << unread << ")\n"
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
              << escaped(read.site + "'s reduction would run over " + to_string(extent)) << " = \" + std::to_string("
              << value << ") + \" elements; a reduction's extent must be zero or positive: check the sizes\");\n";
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
      out << "  if (" << arg.name << "_elements_ > 0 && " << output->name << "_elements_ > 0 && " << arg.name << " < "
          << end_of(*output) << " && " << output->name << " < " << end_of(arg) << ")\n"
          << "    return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"the output " << output->name
          << " overlaps the input " << arg.name
          << " in device memory; pass an output that shares no memory with any input\");\n";
    }
  }
  return out.str();
}

} // namespace coalesce::launcher_text
