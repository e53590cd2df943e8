#pragma once
// Shared by the launcher's header and source (LauncherSource.h): the
// launcher's arguments in signature order, checked to be usable as C++
// parameter names, and the text both files print of them.

#include "runtime/aot/LauncherSource.h"

#include <cstddef>
#include <string>
#include <vector>

namespace coalesce::launcher_text {

/// One argument of the launcher, in signature order (the stream is last).
struct LauncherArg {
  std::string name;
  const Argument *buffer = nullptr; ///< set for a buffer
  LauncherSize size;                ///< for a size
  bool is_buffer() const { return buffer != nullptr; }
};

/// The launcher's arguments: the inputs in the generator's order, the other
/// buffers and the output in the program's, then the sizes. A name a C++
/// parameter cannot take, two alike, or an order naming no input is a
/// UserError.
std::vector<LauncherArg> launcher_args(const LauncherSpec &spec);
const LauncherArg *find_arg(const std::vector<LauncherArg> &args, const std::string &name);
/// The workspace arguments of a program (split_k, padded copies), in program order.
std::vector<const Argument *> workspace_args(const LauncherSpec &spec);

/// "[M][K]"
std::string extents_text(const Argument &buffer);
/// " (a view: strides lda x 1)", " (column-major: strides 1 x M)", or "".
std::string view_text(const Argument &buffer);
/// "M*K", for messages about element counts.
std::string elements_text(const Argument &buffer);
/// `bytes` as the initializer of an unsigned char array, 16 per line.
std::string byte_array_lines(const std::string &bytes, const std::string &indent);
std::string upper_case(std::string text);
/// `text` inside a C string literal: quotes and backslashes escaped.
std::string escaped(const std::string &text);
/// CUdeviceptr for f32; a typedef of it named after a narrow element type.
std::string device_pointer_type(Type type);
/// The guarded typedefs for the narrow buffers among `args`.
std::string element_typedefs(const std::vector<LauncherArg> &args);
/// "CUresult NAME(CUdeviceptr A, ..., int M, ..., [CUdeviceptr workspace,] CUstream stream)"
std::string signature(const std::string &name, const std::vector<LauncherArg> &args, bool workspace);
/// "size_t NAME_workspace_bytes(int M, ...)": the sizes only.
std::string workspace_signature(const std::string &name, const std::vector<LauncherArg> &args);
std::string grid_text(const GpuKernel &kernel);
std::string block_text(const GpuKernel &kernel);
std::string pad(const std::string &text, size_t width);
/// The launcher's lines laying the workspace out: each part at a 256-byte
/// aligned offset, in program order (`offsets`: with each part's offset).
std::string workspace_layout(const std::vector<const Argument *> &workspaces, bool offsets);

} // namespace coalesce::launcher_text
