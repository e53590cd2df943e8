#pragma once
// The C++ the ahead-of-time tool writes next to the PTX: NAME.h, declaring a
// typed launcher, and NAME.cpp, defining it with the PTX embedded. The
// launcher depends only on the CUDA Driver API (cuda.h, libcuda): no LLVM,
// no Coalesce headers.

#include "codegen/GpuTarget.h"
#include "scheduler/LoweredFunc.h"

#include <optional>
#include <string>
#include <vector>

namespace coalesce {

/// A size argument of the launcher: a run-time scalar of the program, or a
/// size fixed when generating, which the launcher checks it is passed.
struct LauncherSize {
  std::string name;
  std::string help;
  std::optional<int> fixed;
};

/// Everything the launcher and its header say.
struct LauncherSpec {
  std::string name;         ///< the launcher function, and the files' base name
  std::string generator;    ///< the generator it came from
  std::string description;  ///< the generator's one-line description
  std::string command_line; ///< the flags that regenerate it
  GpuTarget target;
  GpuProgram program;  ///< its kernels named after `name` (NAME, NAME_1, ...)
  std::string ptx;
  /// The PTX assembled by ptxas for `target` (an ELF cubin), embedded next
  /// to it and loaded first; empty: the PTX alone.
  std::string cubin;
  /// The launcher's size arguments in order; scalars of the program not
  /// listed are appended in the program's order.
  std::vector<LauncherSize> sizes;
  /// The launcher's input buffers in order (Generator::input_order); inputs
  /// not listed follow in the program's order. A name that is no input of
  /// the program is a UserError.
  std::vector<std::string> inputs;
};

/// NAME.h: the launcher's declaration, documented (buffers, shapes,
/// row-major layout, argument order, grid and block, errors, how to build).
std::string launcher_header(const LauncherSpec &spec);

/// True for a C++ keyword (and the alternative tokens: and, or, ...).
bool is_cpp_keyword(const std::string &name);

/// NAME.cpp: the launcher. It loads the embedded module once per process
/// (lazily, under a mutex): the cubin when there is one, falling back to
/// the PTX (JIT-compiled by the driver) if the driver refuses it. Both are
/// byte arrays, NAME_cubin and NAME_ptx. It checks its arguments, computes
/// the grid from the sizes and launches each kernel on the caller's stream.
std::string launcher_source(const LauncherSpec &spec);

} // namespace coalesce
