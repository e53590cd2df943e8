#pragma once
// How many times a piece of text occurs in a loop nest, PTX or message
// (overlapping occurrences counted).

#include <cstddef>
#include <string>

namespace coalesce::testing {

inline size_t occurrences(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace coalesce::testing
