#pragma once
// What the ahead-of-time tool produces for one generator, computed entirely
// in memory (the caller writes it, all or nothing): the PTX, the launcher's
// header and source, and for inspection the loop nest and the LLVM IR.

#include "codegen/GpuTarget.h"
#include "runtime/aot/Generator.h"

#include <string>
#include <vector>

namespace coalesce {

/// One kind of output; --emit names them.
enum class EmitKind { Ptx, Header, Launcher, Loops, Llvm, Html };

/// "ptx,header,launcher" -> the kinds, in that order, without repeats. An
/// unknown or empty name is a UserError listing the accepted ones.
std::vector<EmitKind> parse_emit_list(const std::string &comma_separated);

/// The accepted --emit names with what each is, one per line, for --help.
const char *emit_kinds_help();

/// NAME.ptx, NAME.h, NAME.cpp, NAME.loops.txt, NAME.ll, NAME.html.
std::string emitted_file_name(const std::string &name, EmitKind kind);

/// One output: what it is, its file name, its text.
struct EmittedFile {
  EmitKind kind;
  std::string file_name;
  std::string contents;
};

/// What to compile and how to describe it in the generated header.
struct AotRequest {
  std::string generator_name;
  std::string description;  ///< the generator's one-line description
  std::string name;         ///< the launcher and file base name (a C identifier)
  GpuTarget target;
  std::vector<EmitKind> emit;
  std::string command_line; ///< the flags that regenerate the output
  /// Embed in the launcher, next to the PTX, the cubin ptxas assembles
  /// from it for `target` (--cubin); the launcher loads it first.
  bool cubin = false;
};

/// A UserError unless `name` can name the launcher function and files.
void check_output_name(const std::string &name);

/// Builds `generator`'s Func (its parameters already set) for
/// `request.target` and produces each requested output, in the order
/// requested. Its kernels are named after `request.name` (NAME, NAME_1,
/// ...: the PTX entries coalesce_NAME, ...), so that the kernels of two
/// launchers differ in a profiler. Writes nothing.
std::vector<EmittedFile> compile_generator(Generator &generator, const AotRequest &request);

} // namespace coalesce
