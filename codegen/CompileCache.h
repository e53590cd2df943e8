#pragma once
// A cache of compiled code on disk, shared by every process of the user:
// one file per entry, named by a 128-bit hash of a key text that holds
// everything that determines the output (for PTX: the lowered loop nest, the
// arguments, the target, the compiler's and LLVM's versions; PtxCache.h).
//
// Entry file: a header, then the payload.
//   coalesce-cache 1\n  key <32 hex>\n  size <bytes>\n  checksum <16 hex>\n  \n
// The checksum (xxh3 of the payload) and the size catch a corrupted or
// truncated entry, which is then ignored (and replaced by the next store),
// never loaded. Writers write a unique temporary file in the same directory
// and rename it over the entry, so a reader sees a whole old entry or a
// whole new one, whatever other processes do.
//
// Where: COALESCE_CACHE_DIR, else $XDG_CACHE_HOME/coalesce, else
// ~/.cache/coalesce. COALESCE_CACHE=0 turns the cache off. A directory that
// cannot be created or written turns it off for this process, with one
// warning on stderr: the cache never makes a compilation fail.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace coalesce {

class CompileCache {
public:
  /// The cache the environment asks for (read at each call, so a program or
  /// test can change it).
  static CompileCache from_environment();
  /// A cache in `directory`; an empty directory means no cache.
  explicit CompileCache(std::string directory) : directory_(std::move(directory)) {}

  bool enabled() const { return !directory_.empty(); }
  const std::string &directory() const { return directory_; }

  /// The payload stored under `key` with extension `kind` ("ptx"), if there
  /// is a whole, intact entry for exactly this key.
  std::optional<std::string> load(const std::string &key, const char *kind) const;
  /// Stores `payload` under `key`. Failures are not errors: see above.
  void store(const std::string &key, const char *kind, const std::string &payload) const;

  /// The entry's path (for tests and messages).
  std::string entry_path(const std::string &key, const char *kind) const;

  /// What the directory holds: its entries (files named <32 hex>.<kind>)
  /// and their bytes, headers included. Nothing for a disabled cache or a
  /// directory not made yet.
  struct Contents {
    size_t entries = 0;
    uint64_t bytes = 0;
  };
  Contents contents() const;
  /// Removes every entry, and the temporary files of stores that were
  /// interrupted; leaves any other file alone. Returns the entries removed.
  /// Another process may store again at once: clearing never breaks it.
  size_t clear() const;

private:
  std::string directory_;
};

/// The 128-bit hash naming `key`'s entry, as 32 hex digits.
std::string cache_key_hash(const std::string &key);

} // namespace coalesce
