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
/// rule() names, stably, the check or pass that refused it ("check_mma",
/// "check_gpu_limits", ...; empty when raised outside lowering): the
/// autotuner counts refused candidates by it, and unlike the message it does
/// not change when a message is reworded.
class UserError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
  const std::string &rule() const { return rule_; }
  /// Sets the rule unless an inner pass has already named one.
  void attribute_to(const std::string &rule) {
    if (rule_.empty())
      rule_ = rule;
  }

private:
  std::string rule_;
};

/// Runs `step`; a UserError escaping it is attributed to `rule` (see
/// UserError::rule) and rethrown unchanged otherwise.
template <typename Step> decltype(auto) attributed_to(const char *rule, Step &&step) {
  try {
    return step();
  } catch (UserError &error) {
    error.attribute_to(rule);
    throw;
  }
}

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
