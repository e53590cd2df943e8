// CodeGenPTX's MMA instructions: the warp MMA (mma.sync, its fragments
// gathered with ldmatrix where they are in shared memory) and the
// warpgroup MMA (wgmma.mma_async on shared-memory descriptors).

#include "codegen/CodeGenPTXEmitter.h"

#include "codegen/MmaOperandLayout.h"
#include "codegen/NvptxTarget.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace coalesce {

namespace {

// The LLVM intrinsic of a warp-level MMA: one per kind, so a kind without
// its row does not compile (-Werror=switch).
llvm::Intrinsic::ID warp_mma_intrinsic(MmaKind kind) {
  switch (kind) {
  case MmaKind::BF16_m16n8k16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
  case MmaKind::F16_m16n8k16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  case MmaKind::TF32_m16n8k8:
  case MmaKind::TF32Truncated_m16n8k8: return llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;
  case MmaKind::BF16_wgmma_m64k16:
  case MmaKind::F16_wgmma_m64k16:
  case MmaKind::TF32_wgmma_m64k8:
  case MmaKind::E4M3_wgmma_m64k32:
  case MmaKind::E5M2_wgmma_m64k32:
  case MmaKind::TF32Truncated_wgmma_m64k8:
  case MmaKind::None: break;
  }
  internal_error("no warp MMA intrinsic for ", mma_kind_name(kind));
}

} // namespace

void CodeGenPTX::emit_warp_mma(const WarpMma *op) {
  if (is_warpgroup_mma(op->kind))
    return emit_warpgroup_mma(op);
  const auto *store = op->update.as<Store>();
  const auto *add = store ? store->value.as<Add>() : nullptr;
  const auto *mul = add ? add->b.as<Mul>() : nullptr;
  COALESCE_INTERNAL_ASSERT(mul, "warp MMA update is not acc + a * b");
  const MmaInstruction &instruction = mma_instruction(op->kind);
  bool tf32 = instruction.tf32 != Tf32Operands::NotTf32;
  bool round = instruction.tf32 == Tf32Operands::RoundedToNearest;
  llvm::Value *lane = codegen(op->lane);
  llvm::Value *group = builder_->CreateLShr(lane, 2), *thread = builder_->CreateAnd(lane, 3);
  auto plus = [&](llvm::Value *v, int c) { return builder_->CreateAdd(v, builder_->getInt32(c)); };
  auto times2 = [&](llvm::Value *v) { return builder_->CreateShl(v, 1); };
  // The operand at (m, n, k): the expression with the element bound.
  auto element = [&](const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k) {
    variables_.push(kMmaRow, m);
    variables_.push(kMmaColumn, n);
    variables_.push(kMmaStep, k);
    llvm::Value *value = codegen(operand);
    variables_.pop(kMmaStep);
    variables_.pop(kMmaColumn);
    variables_.pop(kMmaRow);
    return value;
  };
  // One 32-bit register: a tf32 value, or two 16-bit values at k and k + 1
  // (the lower k in the low half).
  auto reg = [&](const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k) -> llvm::Value * {
    const Expr inner = unwrap(operand);
    // Rounded by cvt.rna.tf32.f32; or the f32 bits as they are, whose low 13
    // the instruction drops.
    if (round)
      return builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {element(inner, m, n, k)});
    if (tf32)
      return builder_->CreateBitCast(element(inner, m, n, k), builder_->getInt32Ty());
    auto bits16 = [&](llvm::Value *v) {
      return builder_->CreateZExt(builder_->CreateBitCast(v, builder_->getInt16Ty()), builder_->getInt32Ty());
    };
    llvm::Value *low = bits16(element(inner, m, n, k)), *high = bits16(element(inner, m, n, plus(k, 1)));
    return builder_->CreateOr(low, builder_->CreateShl(high, 16));
  };
  llvm::Value *zero = builder_->getInt32(0);
  std::vector<llvm::Value *> args;
  // ldmatrix: each lane passes the address of one 8-element row and gets
  // back its fragment registers, in the instruction's register order.
  auto ldmatrix = [&](const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k, llvm::Intrinsic::ID id,
                      unsigned count) {
    llvm::Value *address = shared_operand_address(operand, m, n, k);
    llvm::Value *result = builder_->CreateIntrinsic(id, {address->getType()}, {address});
    for (unsigned r = 0; r < count; ++r)
      args.push_back(builder_->CreateExtractValue(result, {r}));
  };
  if (!tf32 && in_shared(a_of(mul)) && has_ldmatrix_rows(unwrap(a_of(mul)), kMmaStep, kMmaColumn, 16)) {
    // Lanes 0-7 address rows 0-7 at k 0, 8-15 rows 8-15, 16-23 rows 0-7
    // at k 8, 24-31 rows 8-15 at k 8: a0..a3.
    llvm::Value *row = builder_->CreateOr(builder_->CreateAnd(lane, 7), builder_->CreateAnd(lane, 8));
    llvm::Value *k = builder_->CreateAnd(builder_->CreateLShr(lane, 1), 8);
    ldmatrix(a_of(mul), row, zero, k, llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16, 4);
  } else if (!tf32 && in_shared(a_of(mul)) && has_ldmatrix_rows(unwrap(a_of(mul)), kMmaRow, kMmaColumn, 16)) {
    // A stored K x M (A(k, i)): its rows are along m. Lanes 0-7 address k
    // 0-7 at row 0, 8-15 the same k at row 8, 16-23 k 8-15 at row 0, 24-31
    // k 8-15 at row 8; .trans hands each lane the pairs along k: a0..a3.
    llvm::Value *row = builder_->CreateAnd(lane, 8);
    llvm::Value *k =
        builder_->CreateOr(builder_->CreateAnd(lane, 7), builder_->CreateAnd(builder_->CreateLShr(lane, 1), 8));
    ldmatrix(a_of(mul), row, zero, k, llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16, 4);
  } else {
    // A: rows g and g + 8; k from 2t (bf16/f16: pairs, then + 8) or t (tf32: then + 4).
    for (int r = 0; r < 4; ++r) {
      llvm::Value *m = r % 2 ? plus(group, 8) : group;
      llvm::Value *k = tf32 ? (r / 2 ? plus(thread, 4) : thread) : (r / 2 ? plus(times2(thread), 8) : times2(thread));
      args.push_back(reg(a_of(mul), m, zero, k));
    }
  }
  if (!tf32 && in_shared(b_of(mul)) && has_ldmatrix_rows(unwrap(b_of(mul)), kMmaColumn, kMmaRow, 8)) {
    // B's rows are along k: lanes 0-15 address k = lane (lanes 16-31
    // repeat them); .trans hands each lane the pairs along k.
    ldmatrix(b_of(mul), zero, zero, builder_->CreateAnd(lane, 15),
             llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16, 2);
  } else if (!tf32 && in_shared(b_of(mul)) && has_ldmatrix_rows(unwrap(b_of(mul)), kMmaStep, kMmaRow, 16)) {
    // B stored N x K (W(j, k)): its rows are along k, as A's. Lanes 0-7
    // address columns 0-7 at k 0, 8-15 the same columns at k 8; without
    // .trans each lane gets column g at k 2t, 2t + 1 (b0, b1), then + 8.
    ldmatrix(b_of(mul), zero, builder_->CreateAnd(lane, 7), builder_->CreateAnd(lane, 8),
             llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16, 2);
  } else {
    // B: column g; k as for A's first two registers.
    for (int r = 0; r < 2; ++r) {
      llvm::Value *k = tf32 ? (r ? plus(thread, 4) : thread) : (r ? plus(times2(thread), 8) : times2(thread));
      args.push_back(reg(b_of(mul), zero, group, k));
    }
  }
  // C: this lane's 4 accumulators, at constant register indices.
  std::vector<llvm::Value *> addresses;
  for (int v = 0; v < 4; ++v) {
    variables_.push(kMmaFragRow, builder_->getInt32(v / 2));
    variables_.push(kMmaFragColumn, builder_->getInt32(v % 2));
    std::vector<Expr> index = store->indices;
    addresses.push_back(buffer_element(store->buffer, index, Float(32)));
    variables_.pop(kMmaFragColumn);
    variables_.pop(kMmaFragRow);
    args.push_back(builder_->CreateLoad(builder_->getFloatTy(), addresses.back()));
  }
  if (instruction.operand == Float(16)) {
    auto *half2 = llvm::FixedVectorType::get(builder_->getHalfTy(), 2);
    for (int r = 0; r < 6; ++r)
      args[r] = builder_->CreateBitCast(args[r], half2);
  }
  llvm::Value *result = builder_->CreateIntrinsic(warp_mma_intrinsic(op->kind), {}, args);
  for (unsigned v = 0; v < 4; ++v)
    builder_->CreateStore(builder_->CreateExtractValue(result, {v}), addresses[v]);
}

void CodeGenPTX::emit_warpgroup_mma(const WarpMma *op) {
  const auto *store = op->update.as<Store>();
  const auto *add = store ? store->value.as<Add>() : nullptr;
  const auto *mul = add ? add->b.as<Mul>() : nullptr;
  COALESCE_INTERNAL_ASSERT(mul, "warpgroup MMA update is not acc + a * b");
  llvm::Type *i64 = builder_->getInt64Ty();
  // The operand's first element (mma.m = mma.n = mma.k = 0) in the shared
  // window, and its descriptor (bits 0-13 start >> 4, 16-29 leading byte
  // offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle: 1 = 128 B).
  auto descriptor = [&](const Expr &operand, const MmaSharedOperand &layout) {
    COALESCE_INTERNAL_ASSERT(in_shared(operand), "warpgroup MMA operand outside shared memory");
    llvm::Value *zero = builder_->getInt32(0);
    llvm::Value *address = shared_operand_address(operand, zero, zero, zero);
    // The field holds bits 4-17 of the address, the offset in the
    // block's shared memory (228 KB at most). The address itself may
    // have higher bits: in a cluster, a block's shared window carries
    // its rank (bit 24 and up), which unmasked would land in the leading
    // byte offset's field (rank 1 read B's second 64-column box 256
    // bytes off, two rows of k: wrong results in every block but the
    // cluster's first).
    llvm::Value *start = builder_->CreateLShr(builder_->CreatePtrToInt(address, builder_->getInt32Ty()), 4);
    start = builder_->CreateZExt(builder_->CreateAnd(start, builder_->getInt32(0x3FFF)), i64);
    uint64_t fixed = (static_cast<uint64_t>(layout.leading_bytes >> 4) << 16) |
                     (static_cast<uint64_t>(layout.stride_bytes >> 4) << 32) | (uint64_t{1} << 62);
    return builder_->CreateOr(start, llvm::ConstantInt::get(i64, fixed));
  };
  llvm::Value *a_descriptor = descriptor(mul->a, op->a), *b_descriptor = descriptor(mul->b, op->b);
  int count = op->n / 2;
  std::vector<llvm::Value *> addresses, accumulators;
  for (int r = 0; r < count; ++r) {
    variables_.push(kMmaFragBlock, builder_->getInt32(r / 4));
    variables_.push(kMmaFragRow, builder_->getInt32(r % 4 / 2));
    variables_.push(kMmaFragColumn, builder_->getInt32(r % 2));
    addresses.push_back(buffer_element(store->buffer, store->indices, Float(32)));
    variables_.pop(kMmaFragColumn);
    variables_.pop(kMmaFragRow);
    variables_.pop(kMmaFragBlock);
    accumulators.push_back(builder_->CreateLoad(builder_->getFloatTy(), addresses.back()));
  }
  // The step's fence opens the first MMA's own instruction block, so
  // that nothing (such as the copies of zeroed accumulators into the
  // registers the MMA ties) lands between the two: ptxas would inject a
  // warpgroup.arrive there (C7519).
  std::string fence = pending_wgmma_fence_ ? "wgmma.fence.sync.aligned;\n" : "";
  pending_wgmma_fence_ = false;
  const char *ptx_type = mma_instruction(op->kind).ptx_type;
  std::string text = str_cat("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n", fence, "wgmma.mma_async.sync.aligned.m64n",
                             op->n, "k", mma_k(op->kind), ".f32.", ptx_type, ".", ptx_type, " {");
  std::string constraints;
  for (int r = 0; r < count; ++r) {
    text += str_cat(r ? ", " : "", "$", r);
    constraints += "=f,";
  }
  // scale-d p (accumulate), scale-a and scale-b 1; the 16-bit forms also
  // take the transpose flags, which tf32 and the 8-bit floats do not have
  // (both operands are K-major: tensorize_mma and the staging made them so).
  text += str_cat("}, $", count, ", $", count + 1, ", p, 1, 1");
  if (warpgroup_mma_reads_b_k_major(op->kind))
    COALESCE_INTERNAL_ASSERT(!op->a.mn_major && !op->b.mn_major, "a ", mma_kind_name(op->kind),
                             " with an MN-major operand");
  else
    text += str_cat(", ", op->a.mn_major ? 1 : 0, ", ", op->b.mn_major ? 1 : 0);
  text += ";\n}";
  constraints += "l,l";
  for (int r = 0; r < count; ++r)
    constraints += str_cat(",", r);
  std::vector<llvm::Type *> results(static_cast<size_t>(count), builder_->getFloatTy());
  std::vector<llvm::Type *> parameters = {i64, i64};
  parameters.insert(parameters.end(), results.begin(), results.end());
  auto *type = llvm::FunctionType::get(llvm::StructType::get(context_, results), parameters, false);
  auto *asm_call = llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/true);
  std::vector<llvm::Value *> args = {a_descriptor, b_descriptor};
  args.insert(args.end(), accumulators.begin(), accumulators.end());
  llvm::Value *result = builder_->CreateCall(type, asm_call, args);
  for (int r = 0; r < count; ++r)
    builder_->CreateStore(builder_->CreateExtractValue(result, {static_cast<unsigned>(r)}),
                          addresses[static_cast<size_t>(r)]);
}

llvm::Value *CodeGenPTX::shared_operand_address(const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k) {
  const auto *load = unwrap(operand).as<Load>();
  COALESCE_INTERNAL_ASSERT(load, "MMA operand is not a load: ", operand);
  variables_.push(kMmaRow, m);
  variables_.push(kMmaColumn, n);
  variables_.push(kMmaStep, k);
  llvm::Value *address = buffer_element(load->buffer, load->indices, load->type);
  variables_.pop(kMmaStep);
  variables_.pop(kMmaColumn);
  variables_.pop(kMmaRow);
  return builder_->CreateAddrSpaceCast(address, builder_->getPtrTy(kSharedAddressSpace));
}

bool CodeGenPTX::in_shared(const Expr &operand) {
  const auto *load = unwrap(operand).as<Load>();
  llvm::Value *base = load ? buffers_.find(load->buffer) : nullptr;
  return base && base->getType()->isPointerTy() && base->getType()->getPointerAddressSpace() == kSharedAddressSpace;
}

Expr CodeGenPTX::unwrap(const Expr &operand) {
  if (const auto *cast = operand.as<Cast>())
    return cast->value;
  if (const auto *call = operand.as<Call>(); call && call->intrinsic && is_tf32_conversion(*call->intrinsic))
    return call->args.at(0);
  return operand;
}

} // namespace coalesce
