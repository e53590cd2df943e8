#pragma once
// Scalar types of values in the algorithm and the IR. Float(32) is the type
// of all arithmetic; Float(16) (IEEE half), BFloat(16) (bfloat16: f32's
// exponent, 7 mantissa bits) and the 8-bit floats Float8E4M3() and
// Float8E5M2() are storage types for inputs and outputs, which arithmetic
// widens to f32 (docs/schedule_language.md, "Element types").

#include <cstdint>
#include <ostream>
#include <string>

namespace coalesce {

struct Type {
  /// E4M3 and E5M2: the two 8-bit float formats of NVIDIA's FP8 (OCP's
  /// E4M3FN, with no infinities, and E5M2), 8 bits each.
  enum class Code : uint8_t { Int, UInt, Float, BFloat, E4M3, E5M2, Bool };
  Code code = Code::Float;
  int bits = 32;

  bool is_float() const {
    return code == Code::Float || code == Code::BFloat || code == Code::E4M3 || code == Code::E5M2;
  }
  bool is_int() const { return code == Code::Int || code == Code::UInt; }
  bool is_bool() const { return code == Code::Bool; }
  /// f16, bf16 or an 8-bit float: a float that arithmetic widens to f32
  /// before using it.
  bool is_narrow_float() const { return ((code == Code::Float || code == Code::BFloat) && bits == 16) || is_fp8(); }
  /// e4m3 or e5m2.
  bool is_fp8() const { return code == Code::E4M3 || code == Code::E5M2; }
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
/// FP8 E4M3 (E4M3FN): 4 exponent bits (bias 7), 3 mantissa bits, largest
/// finite 448, no infinities, one NaN pattern per sign.
inline Type Float8E4M3() { return {Type::Code::E4M3, 8}; }
/// FP8 E5M2: 5 exponent bits (bias 15), 2 mantissa bits, largest finite
/// 57344, infinities and NaNs as IEEE (f16's top byte).
inline Type Float8E5M2() { return {Type::Code::E5M2, 8}; }

inline std::string Type::str() const {
  switch (code) {
  case Code::Int: return "i" + std::to_string(bits);
  case Code::UInt: return "u" + std::to_string(bits);
  case Code::Float: return "f" + std::to_string(bits);
  case Code::BFloat: return "bf" + std::to_string(bits);
  case Code::E4M3: return "e4m3";
  case Code::E5M2: return "e5m2";
  case Code::Bool: return "bool";
  }
  return "?";
}

inline std::ostream &operator<<(std::ostream &out, const Type &type) { return out << type.str(); }

} // namespace coalesce
