#pragma once
// Conversions between f32 and the 16- and 8-bit float formats, bit-exact and
// independent of the host CPU's features: the host buffers (runtime/Buffer),
// the constants the code generators emit and the tests all use these, so
// every place that rounds agrees with every other.
//
// Widening (bf16 -> f32, f16 -> f32) is exact. Narrowing rounds to nearest,
// ties to even; a NaN stays a NaN (quiet, sign kept), an infinity stays an
// infinity, and an f32 too large for f16 becomes an infinity.

#include "dsl/Type.h"

#include <cstdint>

namespace coalesce {

/// bf16 bits -> f32: the bf16 bits are the top half of the f32.
float bf16_bits_to_float(uint16_t bits);
/// f32 -> bf16 bits, round to nearest even.
uint16_t float_to_bf16_bits(float value);

/// IEEE half bits -> f32, subnormals included.
float f16_bits_to_float(uint16_t bits);
/// f32 -> IEEE half bits, round to nearest even (to a subnormal or to zero
/// below 2^-14, to infinity at or above 65520).
uint16_t float_to_f16_bits(float value);

/// e4m3 bits -> f32, exact (S.1111.111 is a NaN: a quiet f32 NaN).
float e4m3_bits_to_float(uint8_t bits);
/// f32 -> e4m3 bits as PTX's cvt.rn.satfinite.e4m3x2.f32 converts:
/// round to nearest, ties to even (to a subnormal or zero below 2^-6);
/// magnitudes of 448 and more, infinities included, saturate to +-448; a NaN
/// becomes 0x7F.
uint8_t float_to_e4m3_bits(float value);
/// e5m2 bits -> f32, exact (they are the top byte of an f16).
float e5m2_bits_to_float(uint8_t bits);
/// f32 -> e5m2 bits as cvt.rn.satfinite.e5m2x2.f32: to nearest even (to a
/// subnormal or zero below 2^-14); magnitudes of 57344 and more,
/// infinities included, saturate to +-57344; a NaN becomes 0x7F.
uint8_t float_to_e5m2_bits(float value);

/// An 8-bit float format, as both the runtime's and the generated code's
/// narrowing read it: its mantissa bits, exponent bias, largest finite
/// value (as f32 bits and as its code) and the NaN code.
struct Fp8Format {
  uint32_t mantissa_bits;
  uint32_t bias;
  uint32_t max_finite_f32;
  uint8_t max_finite;
  uint8_t nan;
};
inline constexpr Fp8Format kE4M3Format{3, 7, (135u << 23) | 0x600000u, 0x7E, 0x7F};  // 448 = 1.75 * 2^8
inline constexpr Fp8Format kE5M2Format{2, 15, (142u << 23) | 0x600000u, 0x7B, 0x7F}; // 57344 = 1.75 * 2^15

/// The bits of the bf16, f16, e4m3 or e5m2 (`type`) nearest to `value`,
/// by the functions above; and back, exactly.
uint16_t float_to_narrow_bits(Type type, float value);
float narrow_bits_to_float(Type type, uint16_t bits);

/// f32 rounded to tf32 as the tensor cores' cvt.rna.tf32.f32 rounds it: 10
/// mantissa bits kept, to nearest, ties away from zero; infinities and NaNs
/// unchanged. (The code generators emit the same rounding.)
float float_to_tf32(float value);
/// f32 truncated to tf32 as the tensor cores read f32 bits (the truncating
/// tf32 kinds): its top 19 bits, a plain mask (a NaN whose payload lies only
/// in the 13 dropped bits becomes an infinity, as on the GPU).
float float_truncated_to_tf32(float value);

} // namespace coalesce
