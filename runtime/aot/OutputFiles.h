#pragma once
// Writes the tool's outputs all or nothing, so that a failed run never
// leaves a half-updated set of files (a new NAME.h beside an old NAME.cpp).

#include <string>
#include <utility>
#include <vector>

namespace coalesce {

/// Writes each (file name, contents) into `directory`, creating it if
/// missing. Every file is written under a temporary name first and renamed
/// into place only once all are written. On a failure while writing, the
/// temporaries are removed and existing files are untouched; on a failure
/// while renaming, the temporaries and the files this run already renamed
/// into place are removed. A UserError says what failed.
void write_files_atomically(const std::string &directory,
                            const std::vector<std::pair<std::string, std::string>> &files);

} // namespace coalesce
