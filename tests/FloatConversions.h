#pragma once
// What the element-type tests share: an f32's bits and back, and a
// conversion run through the host JIT (out(i) = cast(to, x(i))).

#include "runtime/Coalesce.h"

#include <cstdint>
#include <cstring>

namespace coalesce::testing {

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// out(i) = cast(to, x(i)) over the input's n elements, run on the CPU.
inline Buffer convert_on_cpu(const Buffer &input, Type to) {
  const int n = input.shape()[0];
  Input x("x", input.type(), {n});
  Var i("i");
  Func out("out");
  out(i) = cast(to, x(i));
  Buffer result({n}, to);
  Pipeline(out).realize_on_cpu({{"x", input}}, result);
  return result;
}

} // namespace coalesce::testing
