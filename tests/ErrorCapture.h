#pragma once
// Shared by the error tests: run code that must raise a UserError and get
// its message; an InternalError (a compiler bug), another exception or no
// error at all fails the test.

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

} // namespace coalesce::testing

#define CHECK_HAS(message, text)                                                                   \
  CHECK_MESSAGE((message).find(text) != std::string::npos, "message: " << (message) << "\nlacks: " << (text))
