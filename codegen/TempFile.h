#pragma once
// Temporary files for the CUDA tools the compiler runs (ptxas, nvdisasm):
// created in the system's temporary directory, removed when the handle goes
// out of scope.

#include "dsl/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/MemoryBuffer.h>

#include <string>

namespace coalesce {

struct TempFile {
  /// `tool` names who needs it, for the error message.
  TempFile(const char *suffix, const char *tool) {
    if (std::error_code error = llvm::sys::fs::createTemporaryFile("coalesce", suffix, path))
      user_error("cannot create a temporary file for ", tool, ": ", error.message());
    remover.setFile(path);
  }
  llvm::SmallString<128> path;
  llvm::FileRemover remover;
};

/// The file's contents, or "" if it cannot be read.
inline std::string read_temp_file(const llvm::SmallString<128> &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

} // namespace coalesce
