// coalesce-cache: what the compile cache holds, and clearing it.
//
//   coalesce-cache            where the cache is, its entries and their bytes,
//                             and its size cap
//   coalesce-cache --clear    removes every entry (other files are left alone)
//
// The cache is the one every Coalesce program of this user shares
// (codegen/CompileCache.h: COALESCE_CACHE_DIR, else $XDG_CACHE_HOME/coalesce,
// else ~/.cache/coalesce; COALESCE_CACHE=0 turns it off).
#include "codegen/CompileCache.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

const char *const kUsage = "usage: coalesce-cache [--clear]\n"
                           "  with no flag: where the compile cache is, its entries and their bytes, its cap\n"
                           "  --clear: remove every entry\n"
                           "The cache is COALESCE_CACHE_DIR, else $XDG_CACHE_HOME/coalesce, else ~/.cache/coalesce;\n"
                           "COALESCE_CACHE=0 turns it off; COALESCE_CACHE_MAX_BYTES caps it (default 1G; 0: no cap),\n"
                           "the least recently used entries going first.\n";

std::string in_units(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30))
    std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1 << 30));
  else if (bytes >= (uint64_t{1} << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", double(bytes) / 1024.0);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  bool clear = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--clear") == 0 && !clear) {
      clear = true;
    } else if (std::strcmp(argv[a], "--help") == 0 || std::strcmp(argv[a], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "coalesce-cache: %s flag '%s'\n%s",
                   std::strcmp(argv[a], "--clear") == 0 ? "a repeated" : "unknown", argv[a], kUsage);
      return 2;
    }
  }
  coalesce::CompileCache cache = coalesce::CompileCache::from_environment();
  if (!cache.enabled()) {
    std::printf("the compile cache is off (COALESCE_CACHE=0, or no home directory to put it in)\n");
    return 0;
  }
  if (clear) {
    size_t removed = cache.clear();
    coalesce::CompileCache::Contents left = cache.contents();
    std::printf("cache: %s\nremoved %zu entries\n", cache.directory().c_str(), removed);
    if (left.entries) {
      std::fprintf(stderr, "coalesce-cache: %zu entries could not be removed (permissions?)\n", left.entries);
      return 1;
    }
    return 0;
  }
  coalesce::CompileCache::Contents contents = cache.contents();
  std::printf("cache: %s\nentries: %zu (%s)\ncap: %s\n", cache.directory().c_str(), contents.entries,
              in_units(contents.bytes).c_str(),
              cache.max_bytes() ? (in_units(cache.max_bytes()) + ", least recently used entries removed past it").c_str()
                                : "none (COALESCE_CACHE_MAX_BYTES=0)");
  return 0;
}
