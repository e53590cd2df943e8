#include "runtime/Version.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/Path.h>

#include <sstream>

#ifndef COALESCE_VERSION_TEXT
#define COALESCE_VERSION_TEXT "unknown"
#endif

namespace coalesce {

const char *coalesce_version() { return COALESCE_VERSION_TEXT; }

std::string version_line(const std::string &tool) {
  return tool + " (Coalesce " + coalesce_version() + ", built with LLVM " + LLVM_VERSION_STRING + ")";
}

std::string without_program_prefix(const std::string &errors, const std::string &program) {
  const std::string prefix = llvm::sys::path::filename(program).str() + ": ";
  std::istringstream in(errors);
  std::string result;
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, prefix.size(), prefix) == 0)
      line.erase(0, prefix.size());
    result += (result.empty() ? "" : "\n") + line;
  }
  return result;
}

} // namespace coalesce
