#pragma once
// Scalar types of values in the algorithm and the IR. Float(32) is the type
// of all arithmetic; Float(16) (IEEE half) and BFloat(16) (bfloat16: f32's
// exponent, 7 mantissa bits) are storage types for inputs and outputs, which
// arithmetic widens to f32 (docs/schedule_language.md, "Element types").

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
  /// f16 or bf16: a float that arithmetic widens to f32 before using it.
  bool is_narrow_float() const { return is_float() && bits == 16; }
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
