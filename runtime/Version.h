#pragma once
// The version every tool reports: Coalesce's, with the LLVM it was built
// against (coalesce-aot, coalesce-main and coalesce-bench print it for
// --version). For the tools, which parse their flags with llvm::cl; not
// part of the public header.

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

namespace coalesce {

/// Coalesce's version, "0.1.0" (the CMake project's).
const char *coalesce_version();

/// "TOOL (Coalesce 0.1.0, built with LLVM 22.1.8)".
std::string version_line(const std::string &tool);

/// Makes llvm::cl's --version print version_line(tool) (LLVM's own
/// version printer says only "LLVM version ..."). Inline: it must set the
/// printer of the llvm::cl the tool itself parses with, which is not the
/// copy inside a shared libcoalesce.
inline void print_version_as(const std::string &tool) {
  std::string line = version_line(tool);
  llvm::cl::SetVersionPrinter([line](llvm::raw_ostream &out) { out << line << "\n"; });
}

/// llvm::cl's error text with the "PROGRAM: " it puts before each message
/// removed, for a tool that prefixes its own name (`program`: argv[0]).
std::string without_program_prefix(const std::string &errors, const std::string &program);

} // namespace coalesce
