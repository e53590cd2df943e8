#include "codegen/GpuErf.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cstdint>
#include <functional>

namespace coalesce {

namespace {

// libdevice's coefficients, highest degree first: for |x| >= 1.00296
// (`tail`, evaluated at |x|, giving the exponent p of 1 - 2^p) and below
// (`core`, evaluated at x^2, giving erf(x) / x - 1).
constexpr uint32_t kTailThreshold = 0x3F8060FE; // 1.00296
constexpr uint32_t kTail[] = {0x38EB4C3A, 0xBAAE005B, 0x3C09919F, 0xBD24D99A, 0x3E235519, 0x3F69B4F9, 0x3F210A14};
constexpr uint32_t kCore[] = {0x38B1E96A, 0xBA574D20, 0x3BAAD5EA, 0xBCDC1BE7, 0x3DE718AF, 0xBEC093AC, 0x3E0375D3};

// The module's `float name(float)`, always inlined: the one defined
// before, or a new one whose entry block `define(builder, argument)` fills.
llvm::Function *f32_function(llvm::Module &module, const char *name,
                             const std::function<void(llvm::IRBuilder<> &, llvm::Value *)> &define) {
  if (llvm::Function *existing = module.getFunction(name))
    return existing;
  llvm::Type *f32 = llvm::Type::getFloatTy(module.getContext());
  llvm::Function *function = llvm::Function::Create(llvm::FunctionType::get(f32, {f32}, false),
                                                    llvm::GlobalValue::InternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.getContext(), "entry", function));
  define(b, function->getArg(0));
  return function;
}

llvm::Value *fma(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y, llvm::Value *z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {x, y, z});
}

} // namespace

llvm::Function *gpu_erf_function(llvm::Module &module) {
  return f32_function(module, "coalesce.erff", [](llvm::IRBuilder<> &b, llvm::Value *x) {
    llvm::Type *f32 = b.getFloatTy();
    auto constant = [&](uint32_t bits) {
      return llvm::ConstantFP::get(f32, llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, bits)));
    };
    llvm::Value *magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    // Ordered: a NaN takes the core polynomial, which returns it.
    llvm::Value *tail = b.CreateFCmpOGE(magnitude, constant(kTailThreshold), "tail");
    llvm::Value *at = b.CreateSelect(tail, magnitude, b.CreateFMul(x, x));
    llvm::Value *poly = b.CreateSelect(tail, constant(kTail[0]), constant(kCore[0]));
    for (size_t i = 1; i < std::size(kTail); ++i)
      poly = fma(b, poly, at, b.CreateSelect(tail, constant(kTail[i]), constant(kCore[i])));
    llvm::Value *factor = b.CreateSelect(tail, b.CreateFNeg(magnitude), x);
    llvm::Value *core_or_exponent = fma(b, poly, factor, factor);
    // 2^p for every element: in [1/2, 2] where the core polynomial's value
    // stands in for p, and never used there.
    llvm::Value *power = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {f32}, {core_or_exponent});
    llvm::Value *tail_value =
        b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b.CreateFSub(llvm::ConstantFP::get(f32, 1.0), power), x);
    b.CreateRet(b.CreateSelect(tail, tail_value, core_or_exponent));
  });
}

llvm::Function *gpu_erfc_function(llvm::Module &module) {
  return f32_function(module, "coalesce.erfcf", [](llvm::IRBuilder<> &b, llvm::Value *x) {
    llvm::Type *f32 = b.getFloatTy();
    auto constant = [&](double value) { return llvm::ConstantFP::get(f32, value); };
    // P(t), highest degree first.
    constexpr double kP[] = {0.17087277,  -0.82215223, 1.48851587, -1.13520398, 0.27886807,
                             -0.18628806, 0.09678418,  0.37409196, 1.00002368,  -1.26551223};
    llvm::Value *z = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    // +inf: t = 0 and 2^-inf = 0; NaN stays NaN through every step.
    llvm::Value *t = b.CreateIntrinsic(llvm::Intrinsic::nvvm_rcp_approx_ftz_f, llvm::ArrayRef<llvm::Type *>{},
                                       llvm::ArrayRef<llvm::Value *>{fma(b, z, constant(0.5), constant(1.0))});
    llvm::Value *poly = constant(kP[0]);
    for (size_t i = 1; i < std::size(kP); ++i)
      poly = fma(b, poly, t, constant(kP[i]));
    llvm::Value *exponent = fma(b, b.CreateFNeg(z), z, poly);
    llvm::Value *power = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {f32},
                                           {b.CreateFMul(exponent, constant(1.4426950408889634))});
    llvm::Value *tail = b.CreateFMul(t, power); // erfc(|x|)
    // Ordered: a NaN takes 2 - NaN, which is NaN.
    llvm::Value *non_negative = b.CreateFCmpOGE(x, constant(0.0));
    b.CreateRet(b.CreateSelect(non_negative, tail, b.CreateFSub(constant(2.0), tail)));
  });
}

} // namespace coalesce
