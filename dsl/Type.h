#pragma once
// Scalar types of values in the algorithm and the IR. f32 is what the
// kernels use today; the codes admit f16, bf16 and i32 without changing any
// node or pass.

#include <cstdint>
#include <ostream>
#include <string>

namespace coalesce {

struct Type {
  enum class Code : uint8_t { Int, UInt, Float, BFloat, Bool };
  Code code = Code::Float;
  int bits = 32;

  bool is_float() const { return code == Code::Float || code == Code::BFloat; }
  bool is_int() const { return code == Code::Int || code == Code::UInt; }
  bool is_bool() const { return code == Code::Bool; }
  int bytes() const { return bits / 8; }
  bool operator==(const Type &other) const { return code == other.code && bits == other.bits; }
  bool operator!=(const Type &other) const { return !(*this == other); }
  std::string str() const;
};

inline Type Float(int bits) { return {Type::Code::Float, bits}; }
inline Type BFloat(int bits) { return {Type::Code::BFloat, bits}; }
inline Type Int(int bits) { return {Type::Code::Int, bits}; }
inline Type UInt(int bits) { return {Type::Code::UInt, bits}; }
inline Type Bool() { return {Type::Code::Bool, 1}; }

inline std::string Type::str() const {
  switch (code) {
  case Code::Int: return "i" + std::to_string(bits);
  case Code::UInt: return "u" + std::to_string(bits);
  case Code::Float: return "f" + std::to_string(bits);
  case Code::BFloat: return "bf" + std::to_string(bits);
  case Code::Bool: return "bool";
  }
  return "?";
}

inline std::ostream &operator<<(std::ostream &out, const Type &type) { return out << type.str(); }

} // namespace coalesce
