#include "codegen/HostFloatConversions.h"

#include "dsl/Error.h"

namespace coalesce {

namespace {

struct Ops {
  llvm::IRBuilder<> &b;
  llvm::Value *u32(uint32_t v) { return b.getInt32(v); }
  llvm::Value *as_float(llvm::Value *bits) { return b.CreateBitCast(bits, b.getFloatTy()); }
  llvm::Value *as_bits(llvm::Value *value) { return b.CreateBitCast(value, b.getInt32Ty()); }
};

// bf16 is the top half of an f32.
llvm::Value *widen_bf16(Ops o, llvm::Value *bits) {
  return o.as_float(o.b.CreateShl(o.b.CreateZExt(bits, o.b.getInt32Ty()), 16));
}

// Adding 0x7FFF plus the lowest kept bit rounds to nearest even; a NaN is
// truncated with its quiet bit set, so that it cannot become an infinity.
llvm::Value *narrow_bf16(Ops o, llvm::Value *value) {
  llvm::IRBuilder<> &b = o.b;
  llvm::Value *bits = o.as_bits(value);
  llvm::Value *high = b.CreateLShr(bits, 16);
  llvm::Value *is_nan = b.CreateICmpUGT(b.CreateAnd(bits, 0x7FFFFFFFu), o.u32(0x7F800000u));
  llvm::Value *rounded = b.CreateLShr(
      b.CreateAdd(bits, b.CreateAdd(o.u32(0x7FFFu), b.CreateAnd(high, 1u))), 16);
  llvm::Value *quiet_nan = b.CreateOr(high, 0x0040u);
  return b.CreateTrunc(b.CreateSelect(is_nan, quiet_nan, rounded), b.getInt16Ty());
}

// As f16_bits_to_float in dsl/NarrowFloat.cpp.
llvm::Value *widen_f16(Ops o, llvm::Value *half_bits) {
  llvm::IRBuilder<> &b = o.b;
  llvm::Value *h = b.CreateZExt(half_bits, b.getInt32Ty());
  const uint32_t shifted_exponent = 0x7C00u << 13;
  llvm::Value *body = b.CreateShl(b.CreateAnd(h, 0x7FFFu), 13);
  llvm::Value *exponent = b.CreateAnd(body, shifted_exponent);
  llvm::Value *rebiased = b.CreateAdd(body, o.u32((127u - 15u) << 23));
  llvm::Value *special = b.CreateAdd(rebiased, o.u32((128u - 16u) << 23));
  llvm::Value *renormalised = o.as_bits(b.CreateFSub(
      o.as_float(b.CreateAdd(rebiased, o.u32(1u << 23))), o.as_float(o.u32(113u << 23))));
  llvm::Value *out = b.CreateSelect(
      b.CreateICmpEQ(exponent, o.u32(shifted_exponent)), special,
      b.CreateSelect(b.CreateICmpEQ(exponent, o.u32(0)), renormalised, rebiased));
  llvm::Value *sign = b.CreateShl(b.CreateAnd(h, 0x8000u), 16);
  return o.as_float(b.CreateOr(out, sign));
}

// As float_to_f16_bits in dsl/NarrowFloat.cpp.
llvm::Value *narrow_f16(Ops o, llvm::Value *value) {
  llvm::IRBuilder<> &b = o.b;
  llvm::Value *bits = o.as_bits(value);
  llvm::Value *sign = b.CreateAnd(bits, 0x80000000u);
  llvm::Value *magnitude = b.CreateXor(bits, sign);
  llvm::Value *overflow_or_nan = b.CreateSelect(b.CreateICmpUGT(magnitude, o.u32(0x7F800000u)),
                                                o.u32(0x7E00u), o.u32(0x7C00u));
  const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  llvm::Value *subnormal = b.CreateSub(
      o.as_bits(b.CreateFAdd(o.as_float(magnitude), o.as_float(o.u32(magic)))), o.u32(magic));
  llvm::Value *odd = b.CreateAnd(b.CreateLShr(magnitude, 13), 1u);
  llvm::Value *normal = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(magnitude, o.u32(((15u - 127u) << 23) + 0xFFFu)), odd), 13);
  llvm::Value *out = b.CreateSelect(
      b.CreateICmpUGE(magnitude, o.u32((127u + 16u) << 23)), overflow_or_nan,
      b.CreateSelect(b.CreateICmpULT(magnitude, o.u32(113u << 23)), subnormal, normal));
  return b.CreateTrunc(b.CreateOr(out, b.CreateLShr(sign, 16)), b.getInt16Ty());
}

} // namespace

llvm::Value *emit_host_widen(llvm::IRBuilder<> &builder, Type from, llvm::Value *bits) {
  COALESCE_INTERNAL_ASSERT(from.is_narrow_float(), "host widening of ", from);
  return from.code == Type::Code::BFloat ? widen_bf16(Ops{builder}, bits) : widen_f16(Ops{builder}, bits);
}

llvm::Value *emit_host_narrow(llvm::IRBuilder<> &builder, Type to, llvm::Value *value) {
  COALESCE_INTERNAL_ASSERT(to.is_narrow_float(), "host narrowing to ", to);
  return to.code == Type::Code::BFloat ? narrow_bf16(Ops{builder}, value) : narrow_f16(Ops{builder}, value);
}

} // namespace coalesce
