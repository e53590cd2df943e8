#pragma once
// What the tests that write files share: a fresh temporary directory,
// removed with its contents at scope exit, and whole-file reads and writes.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <stdlib.h>

namespace coalesce::testing {

/// A fresh, empty directory named after `prefix`, removed with its
/// contents at scope exit.
struct TempDir {
  explicit TempDir(const std::string &prefix = "coalesce-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path = mkdtemp(pattern.data()) ? std::filesystem::path(pattern) : std::filesystem::path();
    REQUIRE_MESSAGE(!path.empty(), "cannot create a temporary directory");
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  /// The names of what the directory holds, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const std::filesystem::directory_entry &entry : std::filesystem::directory_iterator(path))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
  std::filesystem::path path;
};

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_file(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

} // namespace coalesce::testing
