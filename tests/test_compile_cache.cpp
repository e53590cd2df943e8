// The compile cache on disk (codegen/CompileCache.h, codegen/PtxCache.h):
// hits and misses, corrupted and truncated entries recompiled, concurrent
// writers, the switch that turns it off and an unwritable directory, the
// size cap (least recently used entries removed first) and the statistics.
// Every test works in its own temporary directory.

#include "ErrorCapture.h"
#include "codegen/CodeGenPTX.h"
#include "codegen/CompileCache.h"
#include "codegen/PtxCache.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Gemm.h"
#include "examples/Schedules.h"
#include "scheduler/Lower.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

/// A fresh directory under the system's temporary one, removed afterwards;
/// the environment points the cache at it (and is restored) meanwhile.
struct TempCacheDir {
  TempCacheDir() {
    std::string model = (std::filesystem::temp_directory_path() / "coalesce-cache-test-XXXXXX").string();
    REQUIRE(::mkdtemp(model.data()) != nullptr);
    path = model;
    ::setenv("COALESCE_CACHE_DIR", path.c_str(), 1);
    ::setenv("COALESCE_CACHE", "1", 1);
  }
  ~TempCacheDir() {
    ::unsetenv("COALESCE_CACHE_DIR");
    ::setenv("COALESCE_CACHE", "0", 1);
    std::error_code ignored;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ignored);
    std::filesystem::remove_all(path, ignored);
  }
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> found;
    for (const auto &entry : std::filesystem::directory_iterator(path))
      found.push_back(entry.path());
    return found;
  }
  std::string path;
};

Func small_gemm() {
  Gemm g = scheduled_gemm(find_schedule("shared_staged"));
  return g.out;
}

std::string read(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

} // namespace

TEST_CASE("a second compilation of the same schedule comes from the cache, with the same PTX") {
  TempCacheDir dir;
  Pipeline first(small_gemm());
  std::string ptx = first.ptx();
  CHECK_FALSE(first.last_ptx_from_cache());
  REQUIRE(dir.entries().size() == 1);
  CHECK(dir.entries()[0].extension() == ".ptx");

  Pipeline second(small_gemm());
  CHECK(second.ptx() == ptx);
  CHECK(second.last_ptx_from_cache());
  MESSAGE("miss ", first.last_ptx_compile_ms(), " ms, hit ", second.last_ptx_compile_ms(), " ms");
  CHECK(second.last_ptx_compile_ms() < first.last_ptx_compile_ms());
}

TEST_CASE("another schedule, target or element type is another entry") {
  TempCacheDir dir;
  Pipeline(small_gemm()).ptx();
  Pipeline(small_gemm()).ptx(parse_gpu_target("sm_80"));
  Gemm other = make_gemm(Epilogue::BiasGelu);
  schedule_shared_staged(other, 64, 2);
  Pipeline third(other.out);
  third.ptx();
  CHECK_FALSE(third.last_ptx_from_cache());
  Gemm narrow = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
  schedule_shared_staged(narrow);
  Pipeline fourth(narrow.out);
  fourth.ptx();
  CHECK_FALSE(fourth.last_ptx_from_cache());
  CHECK(dir.entries().size() == 4);
}

TEST_CASE("a corrupted or truncated entry is recompiled and replaced, never loaded") {
  TempCacheDir dir;
  std::string ptx = Pipeline(small_gemm()).ptx();
  REQUIRE(dir.entries().size() == 1);
  std::filesystem::path entry = dir.entries()[0];
  std::string whole = read(entry);

  SUBCASE("one payload byte flipped") {
    std::string damaged = whole;
    damaged[damaged.size() - 10] ^= 0x20;
    write(entry, damaged);
  }
  SUBCASE("truncated") { write(entry, whole.substr(0, whole.size() / 2)); }
  SUBCASE("header only") { write(entry, whole.substr(0, whole.find("\n\n") + 2)); }
  SUBCASE("empty") { write(entry, ""); }
  SUBCASE("garbage") { write(entry, "not a cache entry\n"); }

  Pipeline again(small_gemm());
  CHECK(again.ptx() == ptx);
  CHECK_FALSE(again.last_ptx_from_cache());
  CHECK(read(entry) == whole); // replaced by a whole entry
}

TEST_CASE("the store and load of the cache itself") {
  TempCacheDir dir;
  CompileCache cache(dir.path);
  CHECK_FALSE(cache.load("key", "ptx"));
  cache.store("key", "ptx", "payload");
  CHECK(cache.load("key", "ptx") == std::optional<std::string>("payload"));
  CHECK_FALSE(cache.load("another key", "ptx"));
  cache.store("empty", "ptx", "");
  CHECK(cache.load("empty", "ptx") == std::optional<std::string>(""));
  // No temporary file is left behind.
  for (const auto &entry : dir.entries())
    CHECK(entry.string().find(".tmp") == std::string::npos);
}

TEST_CASE("concurrent writers of one entry leave a whole entry") {
  TempCacheDir dir;
  CompileCache cache(dir.path);
  std::string big(1 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 97)
    big[i] = static_cast<char>('a' + i % 26);

  SUBCASE("threads") {
    std::vector<std::thread> writers;
    for (int t = 0; t < 8; ++t)
      writers.emplace_back([&] {
        for (int n = 0; n < 20; ++n) {
          cache.store("shared key", "ptx", big);
          std::optional<std::string> seen = cache.load("shared key", "ptx");
          CHECK((!seen || *seen == big)); // a reader sees all of it or nothing
        }
      });
    for (std::thread &writer : writers)
      writer.join();
  }
  SUBCASE("processes") {
    std::vector<pid_t> children;
    for (int p = 0; p < 4; ++p) {
      pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        bool ok = true;
        for (int n = 0; n < 20; ++n) {
          cache.store("shared key", "ptx", big);
          std::optional<std::string> seen = cache.load("shared key", "ptx");
          ok = ok && (!seen || *seen == big);
        }
        ::_exit(ok ? 0 : 1);
      }
      children.push_back(child);
    }
    for (pid_t child : children) {
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
  }
  CHECK(cache.load("shared key", "ptx") == std::optional<std::string>(big));
  CHECK(dir.entries().size() == 1);
}

TEST_CASE("COALESCE_CACHE=0 turns the cache off") {
  TempCacheDir dir;
  ::setenv("COALESCE_CACHE", "0", 1);
  CHECK_FALSE(CompileCache::from_environment().enabled());
  Pipeline first(small_gemm());
  first.ptx();
  Pipeline second(small_gemm());
  second.ptx();
  CHECK_FALSE(second.last_ptx_from_cache());
  CHECK(dir.entries().empty());
}

TEST_CASE("where the cache lives") {
  TempCacheDir dir;
  CHECK(CompileCache::from_environment().directory() == dir.path);
  ::unsetenv("COALESCE_CACHE_DIR");
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/somewhere", 1);
  CHECK(CompileCache::from_environment().directory() == "/somewhere/coalesce");
  ::unsetenv("XDG_CACHE_HOME");
  if (const char *home = std::getenv("HOME"))
    CHECK(CompileCache::from_environment().directory() == std::string(home) + "/.cache/coalesce");
  if (xdg)
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST_CASE("an unwritable cache directory compiles without the cache, no error") {
  // Permissions do not stop root; a directory under a regular file cannot
  // be created by anyone.
  TempCacheDir dir;
  write(std::filesystem::path(dir.path) / "file", "x");
  ::setenv("COALESCE_CACHE_DIR", (dir.path + "/file/cache").c_str(), 1);
  std::string expected;
  {
    Pipeline pipeline(small_gemm());
    CHECK_NOTHROW(expected = pipeline.ptx());
    CHECK_FALSE(pipeline.last_ptx_from_cache());
  }
  Pipeline again(small_gemm());
  CHECK(again.ptx() == expected);
  CHECK_FALSE(again.last_ptx_from_cache());
}

TEST_CASE("the key: the same for the same schedule, another for another target") {
  GpuTarget target;
  CHECK(ptx_cache_key(lower_gpu_nest(small_gemm()), target) == ptx_cache_key(lower_gpu_nest(small_gemm()), target));
  CHECK(ptx_cache_key(lower_gpu_nest(small_gemm()), target) !=
        ptx_cache_key(lower_gpu_nest(small_gemm()), parse_gpu_target("sm_80")));
  CHECK(compiler_version().find("coalesce ") == 0);
}

TEST_CASE("the key: a view's strides are part of it (the nest before flattening does not show them)") {
  // Two algorithms that differ only in A's row stride index A differently.
  auto gemm_reading_a_at = [](int stride) {
    Param M("M"), N("N"), K("K");
    Input A("A", Float(32), {M, K}, {Expr(stride), Expr(1)}), B("B", Float(32), {K, N}), bias("bias", Float(32), {N});
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = gelu(acc(i, j) + bias(j));
    schedule_gemm(out, acc, A, B, i, j, k, default_gemm_tiling(0, 0, 0, 132));
    return out;
  };
  GpuTarget target;
  std::string rows_48 = ptx_cache_key(lower_gpu_nest(gemm_reading_a_at(48)), target);
  CHECK(rows_48 == ptx_cache_key(lower_gpu_nest(gemm_reading_a_at(48)), target));
  CHECK(rows_48 != ptx_cache_key(lower_gpu_nest(gemm_reading_a_at(56)), target));
}

TEST_CASE("the cache counts its entries and clears them, and only them") {
  TempCacheDir dir;
  CompileCache cache = CompileCache::from_environment();
  REQUIRE(cache.enabled());
  CHECK(cache.contents().entries == 0);
  cache.store("first key", "ptx", "payload one");
  cache.store("second key", "ptx", std::string(1000, 'x'));
  cache.store("first key", "cubin", "payload three");
  CompileCache::Contents contents = cache.contents();
  CHECK(contents.entries == 3);
  uint64_t on_disk = 0;
  for (const std::filesystem::path &entry : dir.entries())
    on_disk += std::filesystem::file_size(entry);
  CHECK(contents.bytes == on_disk);
  CHECK(contents.bytes > 1000);
  // Not entries: a file of the user's, and what an interrupted store leaves.
  write(std::filesystem::path(dir.path) / "notes.txt", "mine");
  std::string interrupted = cache.entry_path("first key", "ptx") + ".tmp.abc123";
  write(interrupted, "half");
  CHECK(cache.contents().entries == 3);
  CHECK(cache.clear() == 3);
  CHECK(cache.contents().entries == 0);
  CHECK_FALSE(cache.load("first key", "ptx").has_value());
  CHECK_FALSE(std::filesystem::exists(interrupted));
  CHECK(read(std::filesystem::path(dir.path) / "notes.txt") == "mine");
  // A store after the clear works as before.
  cache.store("first key", "ptx", "again");
  CHECK(cache.load("first key", "ptx") == std::optional<std::string>("again"));
}

TEST_CASE("coalesce-cache prints the cache's contents, clears it, and refuses a bad flag") {
  TempCacheDir dir;
  CompileCache cache = CompileCache::from_environment();
  cache.store("a key", "ptx", "payload");
  const std::string tool = std::string(COALESCE_BINARY_DIR) + "/runtime/tools/coalesce-cache";
  auto run = [&](const std::string &args, int *status) {
    std::string output_file = dir.path + "/../coalesce-cache-output-" + std::to_string(::getpid());
    *status = std::system((tool + " " + args + " > " + output_file + " 2>&1").c_str());
    std::string output = read(output_file);
    std::filesystem::remove(output_file);
    return output;
  };
  int status = -1;
  std::string listed = run("", &status);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_HAS(listed, "cache: " + dir.path);
  CHECK_HAS(listed, "entries: 1 (");
  CHECK_HAS(listed, "cap: 1.0 GiB, least recently used entries removed past it");
  std::string bad = run("--clean", &status);
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_HAS(bad, "coalesce-cache: unknown flag '--clean'");
  CHECK(cache.contents().entries == 1); // a bad command line changes nothing
  std::string cleared = run("--clear", &status);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_HAS(cleared, "removed 1 entries");
  CHECK(cache.contents().entries == 0);
}

TEST_CASE("cache sizes: bytes, or K, M, G; anything else is not a size") {
  CHECK(parse_cache_size("1048576") == std::optional<uint64_t>(1048576));
  CHECK(parse_cache_size("512M") == std::optional<uint64_t>(uint64_t{512} << 20));
  CHECK(parse_cache_size("2g") == std::optional<uint64_t>(uint64_t{2} << 30));
  CHECK(parse_cache_size("64K") == std::optional<uint64_t>(uint64_t{64} << 10));
  CHECK(parse_cache_size("0") == std::optional<uint64_t>(0));
  for (const char *bad : {"", "M", "-1", "1.5G", "12X", "10MB", " 5", "99999999999999999999"})
    CHECK_MESSAGE(!parse_cache_size(bad).has_value(), bad);
}

TEST_CASE("COALESCE_CACHE_MAX_BYTES sets the cap; a value that is not a size keeps the default") {
  TempCacheDir dir;
  ::setenv("COALESCE_CACHE_MAX_BYTES", "3K", 1);
  CHECK(CompileCache::from_environment().max_bytes() == 3072);
  ::setenv("COALESCE_CACHE_MAX_BYTES", "0", 1);
  CHECK(CompileCache::from_environment().max_bytes() == 0);
  ::setenv("COALESCE_CACHE_MAX_BYTES", "lots", 1);
  CHECK(CompileCache::from_environment().max_bytes() == CompileCache::kDefaultMaxBytes);
  ::unsetenv("COALESCE_CACHE_MAX_BYTES");
  CHECK(CompileCache::from_environment().max_bytes() == CompileCache::kDefaultMaxBytes);
}

TEST_CASE("past its cap the cache removes the least recently used entries; a load counts as a use") {
  TempCacheDir dir;
  // Entries of about 1 KiB under a cap of 4 KiB.
  CompileCache cache(dir.path, 4096);
  const std::string payload(1000, 'p');
  auto age = [&](const std::string &key, int seconds_ago) {
    std::filesystem::last_write_time(cache.entry_path(key, "ptx"),
                                     std::filesystem::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
  };
  for (int n = 0; n < 3; ++n) {
    cache.store("key " + std::to_string(n), "ptx", payload);
    age("key " + std::to_string(n), 100 - n * 10); // key 0 the oldest
  }
  // key 0, the oldest written, is read now: key 1 is the least recently used.
  CompileCache::Statistics before = CompileCache::statistics();
  CHECK(cache.load("key 0", "ptx") == std::optional<std::string>(payload));
  CHECK_FALSE(cache.load("no such key", "ptx").has_value());
  cache.store("key 3", "ptx", payload); // four entries: past 4096 bytes with their headers
  CompileCache::Statistics after = CompileCache::statistics();
  CHECK(after.hits == before.hits + 1);
  CHECK(after.misses == before.misses + 1);
  CHECK(after.stores == before.stores + 1);
  CHECK(after.evicted == before.evicted + 1);
  CHECK(cache.contents().bytes <= 4096 / 10 * 9);
  CHECK_FALSE(std::filesystem::exists(cache.entry_path("key 1", "ptx")));
  for (const char *kept : {"key 0", "key 2", "key 3"})
    CHECK_MESSAGE(cache.load(kept, "ptx").has_value(), kept);
  // No cap: nothing is removed.
  CompileCache uncapped(dir.path, 0);
  for (int n = 10; n < 20; ++n)
    uncapped.store("key " + std::to_string(n), "ptx", payload);
  CHECK(uncapped.contents().entries == 13);
  // trim_to by hand: down to two entries' bytes, the oldest first.
  CHECK(uncapped.trim_to(2 * uncapped.contents().bytes / 13) == 11);
  CHECK(uncapped.contents().entries == 2);
}
