#pragma once
// f32 <-> bf16/f16/e4m3/e5m2 conversions on the host as integer and f32
// operations.
//
// Why not fpext/fptrunc on `bfloat`/`half`: on an x86 CPU without
// AVX512-BF16 (or without F16C for half) LLVM lowers them to the libcalls
// __truncsfbf2, __truncsfhf2 and __extendhfsf2, which the JIT must find in
// this process; libgcc_s has the half ones only on recent GCCs and the
// bfloat one not at all. These sequences need nothing but the CPU, compute
// exactly what dsl/NarrowFloat.cpp computes (the same algorithms), and
// vectorize. On the host a 16-bit float is stored and passed as i16 bits,
// an 8-bit float as i8 bits.
//
// Internal to codegen/.

#include "dsl/Type.h"

#include <llvm/IR/IRBuilder.h>

namespace coalesce {

/// The f32 value of the i16 `bits` of a bf16 or f16, or the i8 bits of an
/// e4m3 or e5m2 (`from`); exact.
llvm::Value *emit_host_widen(llvm::IRBuilder<> &builder, Type from, llvm::Value *bits);

/// The i16 bits of the bf16 or f16 (`to`) nearest to the f32 `value`, ties
/// to even; NaN stays a quiet NaN, overflow becomes infinity. For e4m3 and
/// e5m2 the i8 bits, as PTX's cvt.rn.satfinite converts: overflow and
/// infinities saturate to the largest finite value, a NaN becomes 0x7F.
llvm::Value *emit_host_narrow(llvm::IRBuilder<> &builder, Type to, llvm::Value *value);

} // namespace coalesce
