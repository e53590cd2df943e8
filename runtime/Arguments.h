#pragma once
// Binding a call's named buffers and parameters to a lowered function's
// arguments, with every check a user's mistake needs: a missing or unknown
// name, a wrong element type or shape, a null pointer, an extent or element
// count over kMaxExtent (dsl/Limits.h), an output buffer that overlaps an input.

#include "runtime/Buffer.h"

#include <map>
#include <string>
#include <vector>

namespace coalesce {

struct Argument; // a lowered function's argument (scheduler/LoweredFunc.h), an internal

/// One named argument of a call: a buffer (non-owning) or an integer.
class ArgumentValue {
public:
  ArgumentValue(const Buffer &buffer) : buffer_(&buffer) {} // NOLINT
  ArgumentValue(int value) : scalar_(value), is_scalar_(true) {} // NOLINT
  const Buffer *buffer() const { return buffer_; }
  bool is_scalar() const { return is_scalar_; }
  int scalar() const { return scalar_; }

private:
  const Buffer *buffer_ = nullptr;
  int scalar_ = 0;
  bool is_scalar_ = false;
};

using Arguments = std::map<std::string, ArgumentValue>;

/// The arguments resolved in the lowered function's order.
struct BoundArguments {
  std::map<std::string, int64_t> params;
  std::vector<const Buffer *> inputs; ///< per argument; nullptr for scalars, workspaces and the output
  std::vector<size_t> elements;       ///< per argument: buffer size in elements
  std::vector<size_t> bytes;          ///< per argument: buffer size in bytes (0 for scalars)
  /// An extent of the output is 0: nothing to compute (a view's buffer may
  /// still hold elements).
  bool output_empty = false;
};

/// The elements of a workspace argument (Argument::is_workspace) at these
/// parameters; a UserError past the 32-bit indexing limit.
int64_t workspace_elements(const Argument &arg, const std::map<std::string, int64_t> &params);

/// Checks `given` (plus the output buffer) against `args` and returns them in
/// order. Throws a UserError naming the first argument that is wrong.
BoundArguments bind_arguments(const std::vector<Argument> &args, const Arguments &given, const Buffer &output);

} // namespace coalesce
