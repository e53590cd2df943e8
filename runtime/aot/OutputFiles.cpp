#include "runtime/aot/OutputFiles.h"

#include "dsl/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

namespace coalesce {

namespace {

/// Removes the temporaries it holds unless they were all renamed into place.
struct Temporaries {
  std::vector<std::string> paths;
  ~Temporaries() {
    for (const std::string &path : paths)
      if (!path.empty())
        llvm::sys::fs::remove(path);
  }
};

} // namespace

void write_files_atomically(const std::string &directory,
                            const std::vector<std::pair<std::string, std::string>> &files) {
  namespace fs = llvm::sys::fs;
  if (fs::exists(directory) && !fs::is_directory(directory))
    user_error("--output-dir=", directory, ": exists and is not a directory");
  if (std::error_code error = fs::create_directories(directory))
    user_error("--output-dir=", directory, ": cannot create the directory: ", error.message());

  Temporaries temporaries;
  std::vector<std::string> finals;
  for (const auto &[file_name, contents] : files) {
    llvm::SmallString<256> final_path(directory);
    llvm::sys::path::append(final_path, file_name);
    llvm::SmallString<256> model(final_path);
    model += ".tmp-%%%%%%";
    int fd = -1;
    llvm::SmallString<256> temporary;
    if (std::error_code error = fs::createUniqueFile(model, fd, temporary))
      user_error("--output-dir=", directory, ": cannot write ", file_name, ": ", error.message());
    temporaries.paths.push_back(temporary.str().str());
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << contents;
    out.close();
    if (out.has_error()) {
      std::string message = out.error().message();
      out.clear_error();
      user_error("--output-dir=", directory, ": cannot write ", file_name, ": ", message);
    }
    finals.push_back(final_path.str().str());
  }
  // Rename in order; if one fails, this run's files that were already
  // renamed into place are removed too (the destructor removes the
  // temporaries), so the directory never holds part of a run.
  for (size_t f = 0; f < finals.size(); ++f) {
    if (std::error_code error = fs::rename(temporaries.paths[f], finals[f])) {
      for (size_t done = 0; done < f; ++done)
        fs::remove(finals[done]);
      user_error("cannot move ", temporaries.paths[f], " to ", finals[f], ": ", error.message(),
                 "; nothing of this run was kept");
    }
    temporaries.paths[f].clear();
  }
  temporaries.paths.clear();
}

} // namespace coalesce
