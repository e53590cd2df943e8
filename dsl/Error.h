#pragma once
// The two error channels. A user's mistake (an illegal schedule, a wrong
// buffer, a bad flag) is a UserError whose message names what is wrong and
// what would be legal; a bug in Coalesce itself is an InternalError. Nothing a
// user can trigger may crash or raise an InternalError.

#include <sstream>
#include <stdexcept>
#include <string>

namespace coalesce {

/// The user asked for something illegal or malformed; the message says what.
class UserError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Coalesce broke one of its own invariants: a compiler bug.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

/// Concatenates anything streamable into one string.
template <typename... Parts> std::string str_cat(const Parts &...parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts> [[noreturn]] void user_error(const Parts &...parts) {
  throw UserError(str_cat(parts...));
}

template <typename... Parts> [[noreturn]] void internal_error(const Parts &...parts) {
  throw InternalError(str_cat("internal error: ", parts...));
}

#define COALESCE_INTERNAL_ASSERT(cond, ...)                                                        \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::coalesce::internal_error(__FILE__, ":", __LINE__, ": ", #cond, " ", ##__VA_ARGS__);       \
  } while (0)

} // namespace coalesce
