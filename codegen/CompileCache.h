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
//
// Size: at most COALESCE_CACHE_MAX_BYTES bytes of entries (a number, with an
// optional K, M or G suffix for KiB, MiB, GiB; 0: no cap), 1 GiB by default
// (about two thousand bf16 kernels). A store that takes the directory past
// the cap removes the least recently used entries (a load touches its
// entry's modification time) until it holds at most nine tenths of it. A
// value that is not a size is ignored with one warning naming it.

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
  /// The cap when COALESCE_CACHE_MAX_BYTES does not set one.
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;
  /// A cache in `directory` of at most `max_bytes` (0: no cap); an empty
  /// directory means no cache.
  explicit CompileCache(std::string directory, uint64_t max_bytes = kDefaultMaxBytes)
      : directory_(std::move(directory)), max_bytes_(max_bytes) {}

  bool enabled() const { return !directory_.empty(); }
  const std::string &directory() const { return directory_; }
  uint64_t max_bytes() const { return max_bytes_; }

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
  /// Removes the least recently used entries (oldest modification time
  /// first) until the entries take at most `bytes`; returns how many it
  /// removed. store() calls it when the directory passes max_bytes().
  size_t trim_to(uint64_t bytes) const;

  /// What this process's caches did, all directories together.
  struct Statistics {
    uint64_t hits = 0, misses = 0, stores = 0, evicted = 0;
  };
  static Statistics statistics();

private:
  /// load() without the bookkeeping: the entry's payload if it is whole.
  std::optional<std::string> load_entry(const std::string &key, const char *kind) const;

  std::string directory_;
  uint64_t max_bytes_;
};

/// "512M", "2G", "1048576" as bytes (K, M, G: powers of 1024); nullopt for
/// anything else.
std::optional<uint64_t> parse_cache_size(const std::string &text);

/// The 128-bit hash naming `key`'s entry, as 32 hex digits.
std::string cache_key_hash(const std::string &key);

} // namespace coalesce
