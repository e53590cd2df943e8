#include "codegen/CompileCache.h"

#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace coalesce {

namespace {

constexpr const char *kMagic = "coalesce-cache 1\n";

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

uint64_t checksum(const std::string &payload) { return llvm::xxh3_64bits(llvm::StringRef(payload)); }

std::atomic<uint64_t> hits{0}, misses{0}, stores{0}, evicted{0};

// Directories this process failed to write: skipped from then on, so a
// read-only cache costs one warning, not one per compilation.
std::mutex unwritable_mutex;
std::set<std::string> unwritable;

bool known_unwritable(const std::string &directory) {
  std::lock_guard<std::mutex> lock(unwritable_mutex);
  return unwritable.count(directory) != 0;
}

void give_up_on(const std::string &directory, const std::string &why) {
  static std::atomic<bool> warned{false};
  {
    std::lock_guard<std::mutex> lock(unwritable_mutex);
    unwritable.insert(directory);
  }
  if (!warned.exchange(true))
    std::fprintf(stderr, "coalesce: warning: cannot write the compile cache in %s (%s); compiling without it\n",
                 directory.c_str(), why.c_str());
}

bool write_all(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string> read_all(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::string data;
  struct stat info {};
  if (::fstat(fd, &info) == 0 && info.st_size > 0)
    data.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

// Reads "NAME VALUE\n" at `pos`; advances past it.
bool header_field(const std::string &data, size_t &pos, const char *name, std::string &value) {
  size_t length = std::strlen(name);
  if (data.compare(pos, length, name) != 0 || pos + length >= data.size() || data[pos + length] != ' ')
    return false;
  size_t end = data.find('\n', pos);
  if (end == std::string::npos)
    return false;
  value = data.substr(pos + length + 1, end - pos - length - 1);
  pos = end + 1;
  return true;
}

} // namespace

std::string cache_key_hash(const std::string &key) {
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(key.data()), key.size()));
  return hex64(hash.high64) + hex64(hash.low64);
}

std::optional<uint64_t> parse_cache_size(const std::string &text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
    ++digits;
  if (digits > 15)
    return std::nullopt; // far past any disk, and safe from overflow below
  uint64_t value = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
  std::string suffix = text.substr(digits);
  if (suffix.empty())
    return value;
  if (suffix.size() != 1)
    return std::nullopt;
  switch (std::toupper(static_cast<unsigned char>(suffix[0]))) {
  case 'K':
    return value << 10;
  case 'M':
    return value << 20;
  case 'G':
    return value << 30;
  default:
    return std::nullopt;
  }
}

namespace {

// COALESCE_CACHE_MAX_BYTES, or the default; a value that is not a size
// warns once and keeps the default.
uint64_t max_bytes_from_environment() {
  const char *text = std::getenv("COALESCE_CACHE_MAX_BYTES");
  if (!text || !*text)
    return CompileCache::kDefaultMaxBytes;
  if (std::optional<uint64_t> bytes = parse_cache_size(text))
    return *bytes;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr,
                 "coalesce: warning: COALESCE_CACHE_MAX_BYTES='%s' is not a size (bytes, or a number with K, M or "
                 "G); keeping the compile cache at its default cap of 1G\n",
                 text);
  return CompileCache::kDefaultMaxBytes;
}

} // namespace

CompileCache CompileCache::from_environment() {
  const char *off = std::getenv("COALESCE_CACHE");
  if (off && std::strcmp(off, "0") == 0)
    return CompileCache("");
  uint64_t cap = max_bytes_from_environment();
  if (const char *dir = std::getenv("COALESCE_CACHE_DIR"); dir && *dir)
    return CompileCache(dir, cap);
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return CompileCache(std::string(xdg) + "/coalesce", cap);
  if (const char *home = std::getenv("HOME"); home && *home)
    return CompileCache(std::string(home) + "/.cache/coalesce", cap);
  return CompileCache(""); // nowhere to put it
}

CompileCache::Statistics CompileCache::statistics() {
  return Statistics{hits.load(), misses.load(), stores.load(), evicted.load()};
}

namespace {
// Whether `name` is an entry's file name: 32 hex digits, a dot, a kind.
bool is_entry_name(const std::string &name) {
  if (name.size() < 34 || name[32] != '.' || name.find(".tmp.") != std::string::npos)
    return false;
  return std::all_of(name.begin(), name.begin() + 32, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}
bool is_temporary_name(const std::string &name) {
  return name.size() > 34 && name[32] == '.' && name.find(".tmp.") != std::string::npos;
}

struct EntryFile {
  std::filesystem::path path;
  std::filesystem::file_time_type used; ///< last stored or loaded
  uint64_t bytes;
};

// The entries in `directory` (files named <32 hex>.<kind>): none for a
// directory not made yet; a file another process removes meanwhile is left out.
std::vector<EntryFile> entry_files(const std::string &directory) {
  std::vector<EntryFile> entries;
  std::error_code error;
  if (directory.empty() || !std::filesystem::is_directory(directory, error))
    return entries;
  for (const auto &file : std::filesystem::directory_iterator(directory, error)) {
    std::error_code file_error;
    if (!file.is_regular_file(file_error) || !is_entry_name(file.path().filename().string()))
      continue;
    uint64_t bytes = file.file_size(file_error);
    std::filesystem::file_time_type used = file.last_write_time(file_error);
    if (!file_error)
      entries.push_back({file.path(), used, bytes});
  }
  return entries;
}

// Removes the least recently used of `entries` until they take at most
// `bytes`; returns how many it removed.
size_t remove_least_recently_used(std::vector<EntryFile> entries, uint64_t bytes) {
  uint64_t total = 0;
  for (const EntryFile &entry : entries)
    total += entry.bytes;
  std::sort(entries.begin(), entries.end(), [](const EntryFile &a, const EntryFile &b) { return a.used < b.used; });
  size_t removed = 0;
  for (const EntryFile &entry : entries) {
    if (total <= bytes)
      break;
    std::error_code remove_error;
    // Another process may have removed it first: its bytes are gone either way.
    if (std::filesystem::remove(entry.path, remove_error))
      ++removed;
    total -= entry.bytes;
  }
  evicted += removed;
  return removed;
}

} // namespace

CompileCache::Contents CompileCache::contents() const {
  Contents contents;
  if (!enabled())
    return contents;
  for (const EntryFile &entry : entry_files(directory_)) {
    ++contents.entries;
    contents.bytes += entry.bytes;
  }
  return contents;
}

size_t CompileCache::clear() const {
  size_t removed = 0;
  std::error_code error;
  if (!enabled() || !std::filesystem::is_directory(directory_, error))
    return 0;
  std::vector<std::filesystem::path> doomed;
  for (const auto &file : std::filesystem::directory_iterator(directory_, error)) {
    std::string name = file.path().filename().string();
    if (is_entry_name(name) || is_temporary_name(name))
      doomed.push_back(file.path());
  }
  for (const std::filesystem::path &path : doomed) {
    std::error_code remove_error;
    if (std::filesystem::remove(path, remove_error) && is_entry_name(path.filename().string()))
      ++removed;
  }
  return removed;
}

size_t CompileCache::trim_to(uint64_t bytes) const {
  if (!enabled())
    return 0;
  return remove_least_recently_used(entry_files(directory_), bytes);
}

std::string CompileCache::entry_path(const std::string &key, const char *kind) const {
  return directory_ + "/" + cache_key_hash(key) + "." + kind;
}

std::optional<std::string> CompileCache::load(const std::string &key, const char *kind) const {
  if (!enabled())
    return std::nullopt;
  std::optional<std::string> payload = load_entry(key, kind);
  if (!payload) {
    ++misses;
    return std::nullopt;
  }
  ++hits;
  // Used now: the size cap removes the least recently used entries first.
  ::utimensat(AT_FDCWD, entry_path(key, kind).c_str(), nullptr, 0);
  return payload;
}

std::optional<std::string> CompileCache::load_entry(const std::string &key, const char *kind) const {
  std::optional<std::string> data = read_all(entry_path(key, kind));
  if (!data)
    return std::nullopt;
  // Anything unexpected is a miss: the entry is recompiled and replaced.
  size_t pos = std::strlen(kMagic);
  if (data->compare(0, pos, kMagic) != 0)
    return std::nullopt;
  std::string stored_key, size, sum;
  if (!header_field(*data, pos, "key", stored_key) || stored_key != cache_key_hash(key) ||
      !header_field(*data, pos, "size", size) || !header_field(*data, pos, "checksum", sum) ||
      pos >= data->size() || (*data)[pos] != '\n')
    return std::nullopt;
  ++pos;
  char *end = nullptr;
  unsigned long long bytes = std::strtoull(size.c_str(), &end, 10);
  if (size.empty() || *end != '\0' || bytes != data->size() - pos)
    return std::nullopt;
  std::string payload = data->substr(pos);
  if (hex64(checksum(payload)) != sum)
    return std::nullopt;
  return payload;
}

void CompileCache::store(const std::string &key, const char *kind, const std::string &payload) const {
  if (!enabled() || known_unwritable(directory_))
    return;
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error)
    return give_up_on(directory_, error.message());

  std::string entry = kMagic;
  entry += "key " + cache_key_hash(key) + "\n";
  entry += "size " + std::to_string(payload.size()) + "\n";
  entry += "checksum " + hex64(checksum(payload)) + "\n\n";
  entry += payload;

  // A unique name in the same directory (so the rename cannot cross file
  // systems), then an atomic rename over the entry.
  std::string final_path = entry_path(key, kind);
  std::string temporary = final_path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    return give_up_on(directory_, std::strerror(errno));
  bool written = write_all(fd, entry);
  written = ::close(fd) == 0 && written;
  if (!written || ::rename(temporary.c_str(), final_path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    give_up_on(directory_, why);
    return;
  }
  ++stores;
  if (max_bytes_ == 0)
    return;
  // One listing: past the cap, down to nine tenths of it.
  std::vector<EntryFile> entries = entry_files(directory_);
  uint64_t total = 0;
  for (const EntryFile &entry : entries)
    total += entry.bytes;
  if (total > max_bytes_)
    remove_least_recently_used(std::move(entries), max_bytes_ / 10 * 9);
}

} // namespace coalesce
