// CodeGenLLVM's expressions: constants, variables, casts, arithmetic (index
// arithmetic without signed wrap, reused within a statement), comparisons,
// selects, loads and calls. The statements, the target hooks and the host's
// defaults are in CodeGenLLVM.cpp.

#include "codegen/CodeGenLLVM.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/NarrowFloat.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>

namespace coalesce {

void CodeGenLLVM::visit(const IntImm *op) {
  value_ = llvm::ConstantInt::get(llvm_type_of(op->type), op->value, op->type.code != Type::Code::UInt);
}

void CodeGenLLVM::visit(const FloatImm *op) {
  if (op->type.is_fp8() || (op->type.is_narrow_float() && narrow_floats_as_bits())) {
    float value = static_cast<float>(op->value);
    value_ = llvm::ConstantInt::get(llvm_type_of(op->type), float_to_narrow_bits(op->type, value));
    return;
  }
  value_ = llvm::ConstantFP::get(llvm_type_of(op->type), op->value);
}

void CodeGenLLVM::visit(const Variable *op) {
  value_ = variables_.find(op->name);
  if (!value_)
    internal_error("variable '", op->name, "' is used but not bound at codegen");
}

void CodeGenLLVM::visit(const Cast *op) {
  value_ = emit_cast(op->value.type(), op->type, codegen(op->value));
}

llvm::Value *CodeGenLLVM::emit_cast(Type from, Type to, llvm::Value *value) {
  if (from == to)
    return value;
  // A 16-bit float converts to and from f32 only (cast() in the DSL inserts
  // the f32 step); other pairings are routed through f32 here as well, so no
  // pass that builds a Cast has to know.
  if (from.is_narrow_float())
    return emit_cast(Float(32), to, emit_widen(from, value));
  if (to.is_narrow_float())
    return emit_narrow(to, emit_cast(from, Float(32), value));
  llvm::Type *target = llvm_type_of(to);
  if (to.is_bool())
    return from.is_float() ? builder_->CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0))
                           : builder_->CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
  if (from.is_bool())
    return to.is_float() ? builder_->CreateUIToFP(value, target) : builder_->CreateZExt(value, target);
  bool from_signed = from.code == Type::Code::Int;
  if (from.is_int() && to.is_int())
    return builder_->CreateIntCast(value, target, from_signed);
  if (from.is_float() && to.is_float())
    return builder_->CreateFPCast(value, target);
  if (from.is_float())
    return to.code == Type::Code::Int ? builder_->CreateFPToSI(value, target)
                                      : builder_->CreateFPToUI(value, target);
  return from_signed ? builder_->CreateSIToFP(value, target) : builder_->CreateUIToFP(value, target);
}

llvm::Value *CodeGenLLVM::reuse_or_emit(int tag, llvm::Value *a, llvm::Value *b, llvm::Type *type,
                                        llvm::function_ref<llvm::Value *()> emit) {
  ValueKey key{builder_->GetInsertBlock(), tag, a, b, type};
  auto [entry, added] = emitted_values_.try_emplace(key, nullptr);
  if (added)
    entry->second = emit();
  return entry->second;
}

namespace {
// reuse_or_emit's tags: the integer operations, and element addresses.
enum ReuseTag { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kElement };
} // namespace

// Signed integers wrap nowhere (nsw), as in C; this lets LLVM widen and
// strength-reduce index arithmetic.
void CodeGenLLVM::visit(const Add *op) {
  // An f32 a*b + c is one llvm.fmuladd: the fused multiply-add that
  // `contract` lets the backends make of the fmul/fadd pair anyway (FFMA on
  // the GPU, vfmadd on the host), in one instruction instead of two for the
  // optimizer to carry through the unrolled inner product.
  const auto *product = op->a.as<Mul>();
  const Expr *addend = &op->b;
  if (!product) {
    product = op->b.as<Mul>();
    addend = &op->a;
  }
  if (product && op->type == Float(32) && product->type == Float(32)) {
    llvm::Value *x = codegen(product->a), *y = codegen(product->b), *c = codegen(*addend);
    value_ = builder_->CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, c});
    return;
  }
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  if (op->type.is_float()) {
    value_ = builder_->CreateFAdd(a, b);
    return;
  }
  bool nsw = op->type.code == Type::Code::Int;
  value_ = reuse_or_emit(kAdd, a, b, nullptr, [&] { return builder_->CreateAdd(a, b, "", false, nsw); });
}

void CodeGenLLVM::visit(const Sub *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  if (op->type.is_float()) {
    value_ = builder_->CreateFSub(a, b);
    return;
  }
  bool nsw = op->type.code == Type::Code::Int;
  value_ = reuse_or_emit(kSub, a, b, nullptr, [&] { return builder_->CreateSub(a, b, "", false, nsw); });
}

void CodeGenLLVM::visit(const Mul *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  if (op->type.is_float()) {
    value_ = builder_->CreateFMul(a, b);
    return;
  }
  bool nsw = op->type.code == Type::Code::Int;
  value_ = reuse_or_emit(kMul, a, b, nullptr, [&] { return builder_->CreateMul(a, b, "", false, nsw); });
}

// Integer division and remainder truncate toward zero, as in C.
void CodeGenLLVM::visit(const Div *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  if (op->type.is_float()) {
    value_ = builder_->CreateFDiv(a, b);
    return;
  }
  bool is_signed = op->type.code == Type::Code::Int;
  value_ = reuse_or_emit(kDiv, a, b, nullptr,
                         [&] { return is_signed ? builder_->CreateSDiv(a, b) : builder_->CreateUDiv(a, b); });
}

void CodeGenLLVM::visit(const Mod *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  if (op->type.is_float()) {
    value_ = builder_->CreateFRem(a, b);
    return;
  }
  bool is_signed = op->type.code == Type::Code::Int;
  value_ = reuse_or_emit(kMod, a, b, nullptr,
                         [&] { return is_signed ? builder_->CreateSRem(a, b) : builder_->CreateURem(a, b); });
}

void CodeGenLLVM::visit(const Min *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  // IEEE 754-2019 minimum: a NaN operand gives NaN (as PyTorch's min and
  // relu do), where minnum would drop it. One min.NaN.f32 on sm_80 and up.
  if (op->type.is_float()) {
    value_ = builder_->CreateMinimum(a, b);
    return;
  }
  value_ = reuse_or_emit(kMin, a, b, nullptr, [&] {
    llvm::Value *less = op->type.code == Type::Code::Int ? builder_->CreateICmpSLT(a, b) : builder_->CreateICmpULT(a, b);
    return builder_->CreateSelect(less, a, b);
  });
}

void CodeGenLLVM::visit(const Max *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  // IEEE 754-2019 maximum: NaN propagates, so relu(NaN) is NaN (as in
  // PyTorch) on the host and the GPU alike (max.NaN.f32 on sm_80 and up).
  if (op->type.is_float()) {
    value_ = builder_->CreateMaximum(a, b);
    return;
  }
  value_ = reuse_or_emit(kMax, a, b, nullptr, [&] {
    llvm::Value *greater =
        op->type.code == Type::Code::Int ? builder_->CreateICmpSGT(a, b) : builder_->CreateICmpUGT(a, b);
    return builder_->CreateSelect(greater, a, b);
  });
}

namespace {
/// The predicate for a comparison of operands of type `t`: ordered for floats
/// (false on NaN) except !=, which is true on NaN as in C.
llvm::CmpInst::Predicate predicate(Type t, llvm::CmpInst::Predicate signed_int,
                                   llvm::CmpInst::Predicate unsigned_int,
                                   llvm::CmpInst::Predicate floating) {
  if (t.is_float())
    return floating;
  return t.code == Type::Code::UInt ? unsigned_int : signed_int;
}
} // namespace

#define COALESCE_COMPARE(node, s, u, f)                                                            \
  void CodeGenLLVM::visit(const node *op) {                                                        \
    llvm::Value *a = codegen(op->a), *b = codegen(op->b);                                          \
    value_ = builder_->CreateCmp(predicate(op->a.type(), llvm::CmpInst::s, llvm::CmpInst::u,       \
                                           llvm::CmpInst::f),                                      \
                                 a, b);                                                            \
  }
COALESCE_COMPARE(EQ, ICMP_EQ, ICMP_EQ, FCMP_OEQ)
COALESCE_COMPARE(NE, ICMP_NE, ICMP_NE, FCMP_UNE)
COALESCE_COMPARE(LT, ICMP_SLT, ICMP_ULT, FCMP_OLT)
COALESCE_COMPARE(LE, ICMP_SLE, ICMP_ULE, FCMP_OLE)
COALESCE_COMPARE(GT, ICMP_SGT, ICMP_UGT, FCMP_OGT)
COALESCE_COMPARE(GE, ICMP_SGE, ICMP_UGE, FCMP_OGE)
#undef COALESCE_COMPARE

void CodeGenLLVM::visit(const And *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  value_ = builder_->CreateAnd(a, b);
}

void CodeGenLLVM::visit(const Or *op) {
  llvm::Value *a = codegen(op->a), *b = codegen(op->b);
  value_ = builder_->CreateOr(a, b);
}

void CodeGenLLVM::visit(const Not *op) { value_ = builder_->CreateNot(codegen(op->a)); }

void CodeGenLLVM::visit(const Select *op) {
  llvm::Value *condition = codegen(op->condition);
  llvm::Value *true_value = codegen(op->true_value);
  llvm::Value *false_value = codegen(op->false_value);
  value_ = builder_->CreateSelect(condition, true_value, false_value);
}

llvm::Value *CodeGenLLVM::buffer_element(const std::string &buffer,
                                         const std::vector<Expr> &indices, Type element_type) {
  if (indices.size() != 1)
    internal_error("access to '", buffer, "' has ", indices.size(),
                   " indices: storage flattening must leave one");
  llvm::Value *base = buffers_.find(buffer);
  if (!base)
    internal_error("buffer '", buffer, "' is neither an argument nor allocated here");
  llvm::Value *index = codegen(indices[0]);
  llvm::Type *element = llvm_type_of(element_type);
  return reuse_or_emit(kElement, base, index, element,
                       [&] { return builder_->CreateInBoundsGEP(element, base, index); });
}

void CodeGenLLVM::visit(const Load *op) {
  if (registers_.holds(op->buffer)) {
    value_ = registers_.load(op->buffer, op->indices[0]);
    return;
  }
  llvm::Value *address = buffer_element(op->buffer, op->indices, op->type);
  llvm::Type *type = llvm_type_of(op->type);
  value_ = builder_->CreateAlignedLoad(type, address, module_.getDataLayout().getABITypeAlign(type));
}

void CodeGenLLVM::visit(const Call *op) {
  if (!op->intrinsic)
    internal_error("call to '", op->name, "' reached codegen: lowering replaces them by loads");
  switch (*op->intrinsic) {
  case Intrinsic::AsyncWait:
    emit_async_wait();
    value_ = builder_->getInt32(0);
    return;
  case Intrinsic::AsyncCommit:
    emit_async_commit();
    value_ = builder_->getInt32(0);
    return;
  case Intrinsic::AsyncWaitGroup: {
    auto pending = as_const_int(op->args[0]);
    COALESCE_INTERNAL_ASSERT(pending, "async_wait_group takes one constant");
    emit_async_wait_group(static_cast<int>(*pending));
    value_ = builder_->getInt32(0);
    return;
  }
  case Intrinsic::FenceProxyAsync:
  case Intrinsic::WgmmaFence:
  case Intrinsic::WgmmaCommit:
  case Intrinsic::WgmmaWait: {
    auto pending = op->intrinsic == Intrinsic::WgmmaWait ? as_const_int(op->args[0]) : std::optional<int64_t>(0);
    COALESCE_INTERNAL_ASSERT(pending, "wgmma_wait takes one constant");
    emit_async_proxy_sync(*op->intrinsic, static_cast<int>(*pending));
    value_ = builder_->getInt32(0);
    return;
  }
  case Intrinsic::MbarrierInit:
  case Intrinsic::MbarrierInitFence:
  case Intrinsic::MbarrierExpectTx:
  case Intrinsic::MbarrierWait:
  case Intrinsic::MbarrierInval:
  case Intrinsic::MbarrierArrive: {
    llvm::Value *barrier = nullptr, *operand = nullptr;
    if (!op->args.empty()) {
      const auto *load = op->args[0].as<Load>();
      COALESCE_INTERNAL_ASSERT(load, op->name, " takes the load of its barrier first");
      barrier = buffer_element(load->buffer, load->indices, load->type);
    }
    if (op->args.size() > 1)
      operand = codegen(op->args[1]);
    emit_mbarrier(*op->intrinsic, barrier, operand);
    value_ = builder_->getInt32(0);
    return;
  }
  case Intrinsic::RegistersDecrease:
  case Intrinsic::RegistersIncrease:
  case Intrinsic::ThreadExit:
  case Intrinsic::ClusterBarrier: {
    std::optional<int64_t> count = op->args.empty() ? std::optional<int64_t>(0) : as_const_int(op->args[0]);
    COALESCE_INTERNAL_ASSERT(count, op->name, " takes one constant");
    emit_thread_control(*op->intrinsic, static_cast<int>(*count));
    value_ = builder_->getInt32(0);
    return;
  }
  case Intrinsic::GroupBarrierSync:
  case Intrinsic::GroupBarrierArrive: {
    auto threads = as_const_int(op->args[1]);
    COALESCE_INTERNAL_ASSERT(threads, op->name, " takes a constant count of threads");
    emit_group_barrier(*op->intrinsic, codegen(op->args[0]), static_cast<int>(*threads));
    value_ = builder_->getInt32(0);
    return;
  }
  case Intrinsic::BitXor:
    value_ = builder_->CreateXor(codegen(op->args[0]), codegen(op->args[1]));
    return;
  case Intrinsic::RoundToTf32: value_ = round_to_tf32(codegen(op->args[0])); return;
  case Intrinsic::TruncateToTf32: value_ = truncate_to_tf32(codegen(op->args[0])); return;
  case Intrinsic::Exp:
  case Intrinsic::Erf:
  case Intrinsic::Erfc:
  case Intrinsic::Tanh:
  case Intrinsic::Sqrt:
  case Intrinsic::Abs: {
    llvm::Value *x = codegen(op->args[0]);
    value_ = builder_->CreateCall(math_function(*op->intrinsic, op->type), {x});
    return;
  }
  case Intrinsic::ThreadIdX:
  case Intrinsic::ThreadIdY:
  case Intrinsic::ThreadIdZ:
  case Intrinsic::BlockIdX:
  case Intrinsic::BlockIdY:
  case Intrinsic::BlockIdZ:
    value_ = emit_target_intrinsic(op);
    return;
  case Intrinsic::LastArrival: {
    const auto *counter = op->args[0].as<Load>();
    COALESCE_INTERNAL_ASSERT(counter, "last_arrival takes a counter's load");
    llvm::Value *element = buffer_element(counter->buffer, counter->indices, counter->type);
    llvm::Value *last;
    if (auto constant = as_const_int(op->args[1])) {
      last = emit_last_arrival(element, builder_->getInt32(static_cast<int32_t>(*constant)));
    } else {
      // A count known at run time (split_k_tail's: 1 for a whole tile) is
      // the same for the whole block; a tile of one arrival is its own
      // last, with no count kept and no barrier.
      llvm::Value *arrivals = codegen(op->args[1]);
      llvm::BasicBlock *alone = builder_->GetInsertBlock();
      llvm::BasicBlock *counted = llvm::BasicBlock::Create(context_, "arrival_of_slices", function_);
      llvm::BasicBlock *join = llvm::BasicBlock::Create(context_, "arrival_known", function_);
      builder_->CreateCondBr(builder_->CreateICmpEQ(arrivals, builder_->getInt32(1)), join, counted);
      builder_->SetInsertPoint(counted);
      llvm::Value *counted_last = emit_last_arrival(element, arrivals);
      counted = builder_->GetInsertBlock();
      builder_->CreateBr(join);
      builder_->SetInsertPoint(join);
      llvm::PHINode *phi = builder_->CreatePHI(builder_->getInt1Ty(), 2);
      phi->addIncoming(builder_->getTrue(), alone);
      phi->addIncoming(counted_last, counted);
      last = phi;
    }
    value_ = builder_->CreateZExt(last, builder_->getInt32Ty());
    return;
  }
  case Intrinsic::AtomicAdd:
  case Intrinsic::AsyncLoad:
  case Intrinsic::AsyncLoadVector:
  case Intrinsic::LoadVector:
    // Emitted by visit(const Store *), whose value they are.
    internal_error(op->name, " outside the value of a store");
  }
  internal_error("intrinsic ", static_cast<int>(*op->intrinsic), " is not in the list");
}

void CodeGenLLVM::visit(const Let *op) {
  variables_.push(op->name, codegen(op->value));
  llvm::Value *body = codegen(op->body);
  variables_.pop(op->name);
  value_ = body;
}

} // namespace coalesce
