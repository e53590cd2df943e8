#pragma once
// What the checks of generated launchers against the stand-in driver
// (FakeDriver.h) share: CHECK(condition), which prints a line per failure
// (with the launcher's last error message, where the check names the
// function that returns it), device buffers far apart, and main's result.

#include "FakeDriver.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace launcher_checks {

inline int failures = 0;
/// The launcher's NAME_error_message, printed with each failure; null: none.
inline const char *(*error_message)() = nullptr;

inline void check(bool ok, const char *what, int line) {
  if (ok)
    return;
  if (error_message)
    std::printf("FAIL line %d: %s (message: '%s')\n", line, what, error_message());
  else
    std::printf("FAIL line %d: %s\n", line, what);
  ++failures;
}

/// Whether the launcher's last error message contains `text`.
inline bool message_has(const char *text) { return error_message && std::strstr(error_message(), text); }

/// 4 GiB apart, so that no two buffers of any size used here overlap.
inline const CUdeviceptr A = 1ull << 32, B = 2ull << 32, bias = 3ull << 32, out = 4ull << 32;
inline const CUstream stream = reinterpret_cast<CUstream>(uintptr_t(0x77));

/// main's exit status: 1 after any failure (saying how many), else 0,
/// printing `passed`.
inline int result(const char *passed) {
  if (failures) {
    std::printf("%d launcher checks failed\n", failures);
    return 1;
  }
  std::printf("%s\n", passed);
  return 0;
}

} // namespace launcher_checks

#define CHECK(condition) launcher_checks::check((condition), #condition, __LINE__)
