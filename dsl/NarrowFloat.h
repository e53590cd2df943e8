#pragma once
// Conversions between f32 and the two 16-bit float formats, bit-exact and
// independent of the host CPU's features: the host buffers (runtime/Buffer),
// the constants the code generators emit and the tests all use these, so
// every place that rounds agrees with every other.
//
// Widening (bf16 -> f32, f16 -> f32) is exact. Narrowing rounds to nearest,
// ties to even; a NaN stays a NaN (quiet, sign kept), an infinity stays an
// infinity, and an f32 too large for f16 becomes an infinity.

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

/// f32 rounded to tf32 as the tensor cores' cvt.rna.tf32.f32 rounds it: 10
/// mantissa bits kept, to nearest, ties away from zero; infinities and NaNs
/// unchanged. (The code generators emit the same rounding.)
float float_to_tf32(float value);

} // namespace coalesce
