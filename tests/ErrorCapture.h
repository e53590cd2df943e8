#pragma once
// Shared by the error tests: run code that must raise a UserError and get
// its message; an InternalError (a compiler bug), another exception or no
// error at all fails the test. And the verifiers' tests' internal errors.

#include "dsl/Error.h"

#include <doctest/doctest.h>

#include <string>

namespace coalesce::testing {

template <typename Body> std::string user_error_of(Body body) {
  try {
    body();
  } catch (const InternalError &e) {
    FAIL("an internal error instead of a user error: " << e.what());
  } catch (const UserError &e) {
    return e.what();
  } catch (const std::exception &e) {
    FAIL("an exception that is not a UserError: " << e.what());
  }
  FAIL("no error was raised");
  return "";
}

/// The message of the InternalError `body` raises, or "(no error)": for
/// the verifiers after lowering, fed hand-built statements that a broken
/// pass would leave behind.
template <typename Body> std::string internal_error_of(Body body) {
  try {
    body();
  } catch (const InternalError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace coalesce::testing

// `message` is evaluated once: CHECK_MESSAGE builds its text lazily, when
// the check fails, so `CHECK_HAS(user_error_of(...), ...)` ran the body a
// second time inside doctest's reporter, and a FAIL there (no error, or an
// internal one) deadlocked on the reporter's lock instead of failing.
#define CHECK_HAS(message, text)                                                                   \
  do {                                                                                             \
    const std::string coalesce_check_has_message_ = (message);                                     \
    CHECK_MESSAGE(coalesce_check_has_message_.find(text) != std::string::npos,                     \
                  "message: " << coalesce_check_has_message_ << "\nlacks: " << (text));            \
  } while (false)
