#include "codegen/GpuErf.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <cstdint>

namespace coalesce {

namespace {

// libdevice's coefficients, highest degree first: for |x| >= 1.00296
// (`tail`, evaluated at |x|, giving the exponent p of 1 - 2^p) and below
// (`core`, evaluated at x^2, giving erf(x) / x - 1).
constexpr uint32_t kTailThreshold = 0x3F8060FE; // 1.00296
constexpr uint32_t kTail[] = {0x38EB4C3A, 0xBAAE005B, 0x3C09919F, 0xBD24D99A, 0x3E235519, 0x3F69B4F9, 0x3F210A14};
constexpr uint32_t kCore[] = {0x38B1E96A, 0xBA574D20, 0x3BAAD5EA, 0xBCDC1BE7, 0x3DE718AF, 0xBEC093AC, 0x3E0375D3};

} // namespace

llvm::Function *gpu_erf_function(llvm::Module &module) {
  const char *name = "coalesce.erff";
  if (llvm::Function *existing = module.getFunction(name))
    return existing;
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *f32 = llvm::Type::getFloatTy(context);
  llvm::Function *erf = llvm::Function::Create(llvm::FunctionType::get(f32, {f32}, false),
                                               llvm::GlobalValue::InternalLinkage, name, module);
  erf->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", erf));
  auto constant = [&](uint32_t bits) { return llvm::ConstantFP::get(f32, llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, bits))); };
  auto fma = [&](llvm::Value *x, llvm::Value *y, llvm::Value *z) {
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {x, y, z});
  };

  llvm::Value *x = erf->getArg(0);
  llvm::Value *magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Ordered: a NaN takes the core polynomial, which returns it.
  llvm::Value *tail = b.CreateFCmpOGE(magnitude, constant(kTailThreshold), "tail");
  llvm::Value *at = b.CreateSelect(tail, magnitude, b.CreateFMul(x, x));
  llvm::Value *poly = b.CreateSelect(tail, constant(kTail[0]), constant(kCore[0]));
  for (size_t i = 1; i < std::size(kTail); ++i)
    poly = fma(poly, at, b.CreateSelect(tail, constant(kTail[i]), constant(kCore[i])));
  llvm::Value *factor = b.CreateSelect(tail, b.CreateFNeg(magnitude), x);
  llvm::Value *core_or_exponent = fma(poly, factor, factor);
  // 2^p for every element: in [1/2, 2] where the core polynomial's value
  // stands in for p, and never used there.
  llvm::Value *power = b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz, {f32}, {core_or_exponent});
  llvm::Value *tail_value = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::copysign, b.CreateFSub(llvm::ConstantFP::get(f32, 1.0), power), x);
  b.CreateRet(b.CreateSelect(tail, tail_value, core_or_exponent));
  return erf;
}

} // namespace coalesce
