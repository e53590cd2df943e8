#include "dsl/NarrowFloat.h"

#include "dsl/Error.h"

#include <cstring>

namespace coalesce {

namespace {
uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float float_of(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
} // namespace

float bf16_bits_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16_bits(float value) {
  uint32_t bits = bits_of(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: truncating could make it an infinity
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7FFF plus the lowest kept bit rounds the dropped half to
  // nearest, ties to even; a carry into the exponent is the right answer
  // (up to the next binade, or to infinity).
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The two half conversions follow F. Giesen's branch-light formulation
// ("half_to_float" and "float_to_half_fast3_rtne"): an f32 addition does the
// rounding of subnormals, so it is exact under round-to-nearest-even.
float f16_bits_to_float(uint16_t bits) {
  const uint32_t shifted_exponent = 0x7C00u << 13;
  uint32_t out = (bits & 0x7FFFu) << 13; // exponent and mantissa in place
  uint32_t exponent = out & shifted_exponent;
  out += (127u - 15u) << 23; // rebias
  if (exponent == shifted_exponent) {
    out += (128u - 16u) << 23; // infinity or NaN: the f32 exponent is all ones
  } else if (exponent == 0) {
    out += 1u << 23; // zero or subnormal: renormalise by subtracting 2^-14
    out = bits_of(float_of(out) - float_of(113u << 23));
  }
  return float_of(out | (static_cast<uint32_t>(bits & 0x8000u) << 16));
}

uint16_t float_to_f16_bits(float value) {
  uint32_t bits = bits_of(value);
  uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint32_t out;
  if (bits >= (127u + 16u) << 23) { // |value| >= 2^16, infinity or NaN
    out = bits > 0x7F800000u ? 0x7E00u : 0x7C00u;
  } else if (bits < 113u << 23) { // below 2^-14: an f16 subnormal or zero
    // Adding 0.5 aligns the 10 kept bits at the bottom of the mantissa; the
    // f32 addition rounds them, to nearest even.
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    out = bits_of(float_of(bits) + float_of(magic)) - magic;
  } else {
    uint32_t odd = (bits >> 13) & 1u;
    bits += ((15u - 127u) << 23) + 0xFFFu + odd; // rebias, and round to nearest even
    out = bits >> 13;                            // a carry past 30 exponent values gives 0x7C00, infinity
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

namespace {
// As float_to_f16_bits, with saturation instead of infinities.
uint8_t float_to_fp8_bits(float value, const Fp8Format &f) {
  uint32_t bits = bits_of(value);
  uint32_t sign = (bits >> 24) & 0x80u;
  bits &= 0x7FFFFFFFu;
  if (bits > 0x7F800000u)
    return f.nan;
  if (bits >= f.max_finite_f32) // rounding cannot bring these below the largest finite value
    return static_cast<uint8_t>(sign | f.max_finite);
  uint32_t out;
  if (bits < (128u - f.bias) << 23) { // below the smallest normal: a subnormal or zero
    // An f32 whose last mantissa bit is the format's subnormal step: adding
    // it rounds the magnitude to a whole number of steps, to nearest even.
    const uint32_t magic = ((127u - f.bias) + (23u - f.mantissa_bits) + 1u) << 23;
    out = bits_of(float_of(bits) + float_of(magic)) - magic;
  } else {
    uint32_t shift = 23u - f.mantissa_bits;
    uint32_t odd = (bits >> shift) & 1u;
    bits += ((f.bias - 127u) << 23) + (1u << (shift - 1u)) - 1u + odd; // rebias, round to nearest even
    out = bits >> shift;
  }
  return static_cast<uint8_t>(sign | out);
}
} // namespace

float e4m3_bits_to_float(uint8_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  if ((bits & 0x7Fu) == 0x7Fu)
    return float_of(sign | 0x7FC00000u);
  uint32_t exponent = (bits >> 3) & 0xFu, mantissa = bits & 7u;
  float magnitude = exponent == 0 ? static_cast<float>(mantissa) * float_of((127u - 9u) << 23) // m * 2^-9
                                  : float_of(((exponent + 127u - 7u) << 23) | (mantissa << 20));
  return float_of(bits_of(magnitude) | sign);
}

uint8_t float_to_e4m3_bits(float value) { return float_to_fp8_bits(value, kE4M3Format); }

float e5m2_bits_to_float(uint8_t bits) { return f16_bits_to_float(static_cast<uint16_t>(bits << 8)); }

uint8_t float_to_e5m2_bits(float value) { return float_to_fp8_bits(value, kE5M2Format); }

uint16_t float_to_narrow_bits(Type type, float value) {
  switch (type.code) {
  case Type::Code::BFloat:
    return float_to_bf16_bits(value);
  case Type::Code::E4M3:
    return float_to_e4m3_bits(value);
  case Type::Code::E5M2:
    return float_to_e5m2_bits(value);
  case Type::Code::Float:
    if (type.bits == 16)
      return float_to_f16_bits(value);
    break;
  case Type::Code::Int:
  case Type::Code::UInt:
  case Type::Code::Bool:
    break;
  }
  internal_error("no narrow float bits for ", type);
}

float narrow_bits_to_float(Type type, uint16_t bits) {
  switch (type.code) {
  case Type::Code::BFloat:
    return bf16_bits_to_float(bits);
  case Type::Code::E4M3:
    return e4m3_bits_to_float(static_cast<uint8_t>(bits));
  case Type::Code::E5M2:
    return e5m2_bits_to_float(static_cast<uint8_t>(bits));
  case Type::Code::Float:
    if (type.bits == 16)
      return f16_bits_to_float(bits);
    break;
  case Type::Code::Int:
  case Type::Code::UInt:
  case Type::Code::Bool:
    break;
  }
  internal_error("no narrow float bits for ", type);
}

namespace {
constexpr uint32_t kTf32Kept = 0xFFFFE000u; // sign, exponent, 10 bits of mantissa
} // namespace

// Adding half of the 13 dropped bits to the magnitude rounds to nearest,
// ties away; an exponent of all ones (infinity, NaN) is left alone, as
// cvt.rna.tf32.f32 leaves it.
float float_to_tf32(float value) {
  uint32_t bits = bits_of(value);
  if ((bits & 0x7F800000u) != 0x7F800000u)
    bits = (bits + 0x1000u) & kTf32Kept;
  return float_of(bits);
}

// A plain mask, with no exception: the tensor cores read an f32 operand so,
// and a NaN whose payload lies only in the dropped bits reads as infinity.
float float_truncated_to_tf32(float value) { return float_of(bits_of(value) & kTf32Kept); }

} // namespace coalesce
