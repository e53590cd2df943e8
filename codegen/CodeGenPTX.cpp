#include "codegen/CodeGenPTX.h"

#include "codegen/CheckTargetInstructions.h"

#include "codegen/CodeGenLLVM.h"
#include "codegen/GpuErf.h"
#include "dsl/CompileProfile.h"
#include "codegen/MmaOperandLayout.h"
#include "codegen/NvptxTarget.h"
#include "codegen/OptimizeModule.h"
#include "codegen/PtxAssembler.h"
#include "codegen/Symbols.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <cstdlib>

namespace coalesce {

namespace {

// The LLVM intrinsic of a warp-level MMA: one per kind, so a kind without
// its row does not compile (-Werror=switch).
llvm::Intrinsic::ID warp_mma_intrinsic(MmaKind kind) {
  switch (kind) {
  case MmaKind::BF16_m16n8k16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
  case MmaKind::F16_m16n8k16: return llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;
  case MmaKind::TF32_m16n8k8: return llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;
  case MmaKind::BF16_wgmma_m64k16:
  case MmaKind::F16_wgmma_m64k16:
  case MmaKind::TF32_wgmma_m64k8:
  case MmaKind::E4M3_wgmma_m64k32:
  case MmaKind::E5M2_wgmma_m64k32:
  case MmaKind::None: break;
  }
  internal_error("no warp MMA intrinsic for ", mma_kind_name(kind));
}

constexpr int kTensorMapBytes = 128, kTensorMapAlignment = 64; // CUtensorMap

/// The GPU flavour of the emitter: one kernel per GpuKernel.
class CodeGenPTX : public CodeGenLLVM {
public:
  using CodeGenLLVM::CodeGenLLVM;

  /// `grid_dependencies`: the target's (GpuTarget::has_grid_dependencies).
  void emit(const GpuProgram &program, bool grid_dependencies) {
    for (size_t k = 0; k < program.kernels.size(); ++k) {
      const GpuKernel &kernel = program.kernels[k];
      check_kernel_name(kernel_symbol(kernel.name));
      kernel_ = &kernel;
      // KernelStart::DuringPreviousTail: the kernel waits for the one before
      // it, which lets it start from its first instruction on.
      auto during_tail = [&](size_t n) {
        return grid_dependencies && n < program.kernels.size() &&
               program.kernels[n].start == KernelStart::DuringPreviousTail;
      };
      waits_for_previous_ = during_tail(k);
      lets_next_start_ = during_tail(k + 1);
      dynamic_shared_ = nullptr;
      // The tensor maps follow the arguments, each a 128-byte CUtensorMap
      // passed by value in the parameter space (grid constant: the TMA
      // reads it there; without the attribute LLVM would copy it to local
      // memory, where the TMA cannot read it).
      tensor_map_base_ = static_cast<unsigned>(program.args.size());
      std::vector<llvm::Type *> maps(kernel.tensor_maps.size(), builder_->getPtrTy());
      llvm::Function *function = emit_function(kernel_symbol(kernel.name), program.args, kernel.body,
                                                llvm::GlobalValue::ExternalLinkage, maps);
      for (unsigned m = 0; m < maps.size(); ++m) {
        unsigned param = tensor_map_base_ + m;
        function->getArg(param)->setName(kernel.tensor_maps[m].input + "_tensor_map");
        function->addParamAttr(param, llvm::Attribute::getWithByValType(
                                          context_, llvm::ArrayType::get(builder_->getInt8Ty(), kTensorMapBytes)));
        function->addParamAttr(param, llvm::Attribute::getWithAlignment(context_, llvm::Align(kTensorMapAlignment)));
        function->addParamAttr(param, llvm::Attribute::get(context_, "nvvm.grid_constant"));
      }
      // LLVM 22 marks kernels by calling convention (the old nvvm.annotations
      // "kernel" entry is auto-upgraded to it), and takes the launch bound
      // as a function attribute that the backend prints as `.maxntid`.
      function->setCallingConv(llvm::CallingConv::PTX_Kernel);
      // ptxas caps registers so that this many blocks fit on one SM.
      if (kernel.min_blocks_per_sm > 0)
        function->addFnAttr("nvvm.minctasm", std::to_string(kernel.min_blocks_per_sm));
      function->addFnAttr("nvvm.maxntid", str_cat(kernel.block[0], ",", kernel.block[1], ",",
                                                  kernel.block[2]));
      // Blocks in clusters (gpu_cluster): `.explicitcluster` and
      // `.reqnctapercluster`, so that a plain launch makes the clusters.
      if (kernel.cluster_blocks() > 1)
        function->addFnAttr("nvvm.cluster_dim", str_cat(kernel.cluster[0], ",", kernel.cluster[1], ",",
                                                        kernel.cluster[2]));
    }
    kernel_ = nullptr;
  }

protected:
  void emit_prologue() override {
    if (lets_next_start_)
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_griddepcontrol_launch_dependents, llvm::ArrayRef<llvm::Type *>{},
                                {});
    if (waits_for_previous_)
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_griddepcontrol_wait, llvm::ArrayRef<llvm::Type *>{}, {});
  }

  // The 8-bit floats are their bits (i8) on the GPU as on the host; PTX
  // converts them in pairs (sm_89 and later), a value in the pair's low
  // half: e4m3 / e5m2 -> f16 exactly, then f16 -> f32 exactly.
  llvm::Value *emit_widen(Type from, llvm::Value *value) override {
    if (!from.is_fp8())
      return CodeGenLLVM::emit_widen(from, value);
    std::string text = str_cat("cvt.rn.f16x2.", fp8_ptx_name(from), "x2 $0, $1;");
    llvm::Value *pair = pure_ptx(text, "=r,h", builder_->getInt32Ty(),
                                 {builder_->CreateZExt(value, builder_->getInt16Ty())});
    llvm::Value *half = builder_->CreateBitCast(builder_->CreateTrunc(pair, builder_->getInt16Ty()),
                                                builder_->getHalfTy());
    return builder_->CreateFPExt(half, builder_->getFloatTy());
  }
  // f32 -> e4m3 / e5m2, to nearest even, saturating, NaN to 0x7F (as
  // dsl/NarrowFloat.h's float_to_e4m3_bits): the second source is the
  // pair's low byte.
  llvm::Value *emit_narrow(Type to, llvm::Value *value) override {
    if (!to.is_fp8())
      return CodeGenLLVM::emit_narrow(to, value);
    std::string text = str_cat("cvt.rn.satfinite.", fp8_ptx_name(to), "x2.f32 $0, $1, $2;");
    llvm::Value *pair = pure_ptx(text, "=h,f,f", builder_->getInt16Ty(),
                                 {llvm::ConstantFP::get(builder_->getFloatTy(), 0.0), value});
    return builder_->CreateTrunc(pair, builder_->getInt8Ty());
  }
  static const char *fp8_ptx_name(Type type) { return type.code == Type::Code::E4M3 ? "e4m3" : "e5m2"; }
  // A PTX instruction without side effects, computing one value.
  llvm::Value *pure_ptx(const std::string &text, const std::string &constraints, llvm::Type *result,
                        const std::vector<llvm::Value *> &args) {
    std::vector<llvm::Type *> types;
    for (llvm::Value *arg : args)
      types.push_back(arg->getType());
    auto *type = llvm::FunctionType::get(result, types, false);
    return builder_->CreateCall(type, llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/false), args);
  }

  llvm::FunctionCallee math_function(Intrinsic math, Type type) override {
    if (type != Float(32))
      internal_error("GPU math function '", intrinsic_name(math), "' of ", type, ": only f32 is supported");
    // libdevice's f32 names, linked in after emission; erf's and erfc's
    // own straight-line forms (codegen/GpuErf.h).
    const char *libdevice = nullptr;
    switch (math) {
    case Intrinsic::Erf: return gpu_erf_function(module_);
    case Intrinsic::Erfc: return gpu_erfc_function(module_);
    case Intrinsic::Exp: libdevice = "__nv_expf"; break;
    case Intrinsic::Tanh: libdevice = "__nv_tanhf"; break;
    case Intrinsic::Sqrt: libdevice = "__nv_sqrtf"; break;
    case Intrinsic::Abs: libdevice = "__nv_fabsf"; break;
    default: break; // not math: reported below
    }
    if (!libdevice)
      internal_error("no libdevice function for '", intrinsic_name(math), "'");
    llvm::Type *f32 = llvm::Type::getFloatTy(context_);
    return module_.getOrInsertFunction(libdevice, f32, f32);
  }

  llvm::Value *emit_target_intrinsic(const Call *op) override {
    llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
    switch (*op->intrinsic) {
    case Intrinsic::ThreadIdX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x; break;
    case Intrinsic::ThreadIdY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y; break;
    case Intrinsic::ThreadIdZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z; break;
    case Intrinsic::BlockIdX: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x; break;
    case Intrinsic::BlockIdY: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y; break;
    case Intrinsic::BlockIdZ: id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z; break;
    default: return CodeGenLLVM::emit_target_intrinsic(op);
    }
    // Named after the printed intrinsic, so the LLVM IR reads like the loop nest.
    return builder_->CreateIntrinsic(id, {}, {}, {}, op->name);
  }

  // cp.async (sm_80+): global to shared without passing through registers,
  // so the copy of the next tile overlaps the arithmetic on this one. It
  // copies 4, 8 or 16 bytes; a 2-byte (bf16/f16) element is copied with a
  // plain load and store instead, which the staging barriers order the same.
  void emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *in_bounds) override {
    if (type.bytes() != 4 && in_bounds) {
      // A select, not the base's branch: in the loop the read is clamped
      // into a non-empty input, and a branch per element made the bf16
      // fallback copies 3.6 times slower on the H200 (1.61 -> 5.77 ms at
      // 4093x4091x4097). The one copy that may meet an empty input (the
      // first tile, before the loop) branches in the IR instead.
      llvm::Type *element = llvm_type_of(type);
      llvm::Align align = module_.getDataLayout().getABITypeAlign(element);
      llvm::Value *value = builder_->CreateAlignedLoad(element, source, align);
      value = builder_->CreateSelect(in_bounds, value, llvm::Constant::getNullValue(element));
      builder_->CreateAlignedStore(value, destination, align);
      return;
    }
    if (type.bytes() != 4)
      return CodeGenLLVM::emit_async_copy(destination, source, type, in_bounds);
    llvm::Value *shared = builder_->CreateAddrSpaceCast(destination, builder_->getPtrTy(kSharedAddressSpace));
    llvm::Value *global = builder_->CreateAddrSpaceCast(source, builder_->getPtrTy(1));
    if (!in_bounds) {
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4, llvm::ArrayRef<llvm::Type *>{},
                                llvm::ArrayRef<llvm::Value *>{shared, global});
      return;
    }
    // The source-size form: 0 bytes read means the element is zero-filled.
    llvm::Value *bytes = builder_->CreateSelect(in_bounds, builder_->getInt32(4), builder_->getInt32(0));
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4_s, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{shared, global, bytes});
  }

  // cp.async.cg with a source size: 16 bytes land in shared memory, those
  // past the first count * element bytes as zeros.
  void emit_async_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *count,
                              int vector) override {
    COALESCE_INTERNAL_ASSERT(vector * type.bytes() == 16, "a vector copy is 16 bytes");
    llvm::Value *shared = builder_->CreateAddrSpaceCast(destination, builder_->getPtrTy(kSharedAddressSpace));
    llvm::Value *global = builder_->CreateAddrSpaceCast(source, builder_->getPtrTy(1));
    llvm::Value *bytes = builder_->CreateMul(count, builder_->getInt32(type.bytes()));
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{shared, global, bytes});
  }

  // One ld / st of the whole vector (v4.b32 for 16 bytes): the lowering
  // keeps both addresses aligned to it (scheduler/StageOutputTiles.h).
  llvm::Align vector_copy_alignment(Type type, int lanes) override {
    return llvm::Align(static_cast<uint64_t>(std::max(1, type.bytes()) * lanes));
  }

  // The 32 lanes' parts of a WarpMma are one mma.sync: each lane gathers its
  // fragments of A and B (the elements the instruction's layout assigns to
  // it, not the ones it accumulates), passes its 4 accumulators and gets
  // them back. Row-major A (m x k), column-major B (k x n), as .row.col says.
  void emit_warp_mma(const WarpMma *op) override {
    if (is_warpgroup_mma(op->kind))
      return emit_warpgroup_mma(op);
    const auto *store = op->update.as<Store>();
    const auto *add = store ? store->value.as<Add>() : nullptr;
    const auto *mul = add ? add->b.as<Mul>() : nullptr;
    COALESCE_INTERNAL_ASSERT(mul, "warp MMA update is not acc + a * b");
    const MmaInstruction &instruction = mma_instruction(op->kind);
    bool tf32 = instruction.rounds_to_tf32;
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
      if (tf32)
        return builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_f2tf32_rna, {}, {element(inner, m, n, k)});
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

  // The 128 threads' parts of a warpgroup MMA are one wgmma.mma_async:
  // every thread passes the same two shared-memory matrix descriptors (the
  // operand tiles' start, byte offsets and swizzle) and its n / 2
  // accumulators, in the instruction's register order (4 per 8-column
  // fragment: rows g and g + 8, columns 2t and 2t + 1). LLVM has no
  // intrinsic for it, so it is inline PTX whose outputs are tied to the
  // accumulator inputs: nothing but the instruction defines them between
  // the fence and the wait (ptxas serializes the MMAs otherwise, C7515).
  void emit_warpgroup_mma(const WarpMma *op) {
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
    std::string text = str_cat("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n", fence, "wgmma.mma_async.sync.aligned.m64n", op->n,
                               "k", mma_k(op->kind), ".f32.", ptx_type, ".", ptx_type, " {");
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

  void emit_async_proxy_sync(Intrinsic which, int pending) override {
    switch (which) {
    case Intrinsic::FenceProxyAsync:
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_fence_proxy_async_shared_cta, llvm::ArrayRef<llvm::Type *>{},
                                llvm::ArrayRef<llvm::Value *>{});
      return;
    case Intrinsic::WgmmaFence:
      // Emitted with the step's first MMA (emit_warpgroup_mma).
      COALESCE_INTERNAL_ASSERT(!pending_wgmma_fence_, "two wgmma fences without an MMA between them");
      pending_wgmma_fence_ = true;
      return;
    case Intrinsic::WgmmaCommit:
      COALESCE_INTERNAL_ASSERT(!pending_wgmma_fence_, "a wgmma fence without an MMA before its commit");
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_wgmma_commit_group_sync_aligned, llvm::ArrayRef<llvm::Type *>{},
                                llvm::ArrayRef<llvm::Value *>{});
      return;
    case Intrinsic::WgmmaWait:
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_wgmma_wait_group_sync_aligned, {},
                                {builder_->getInt64(static_cast<uint64_t>(pending))});
      return;
    default:
      internal_error("intrinsic ", intrinsic_name(which), " is not an async-proxy synchronization");
    }
  }

  void emit_thread_control(Intrinsic which, int count) override {
    switch (which) {
    case Intrinsic::RegistersDecrease:
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32, {},
                                {builder_->getInt32(static_cast<uint32_t>(count))});
      return;
    case Intrinsic::RegistersIncrease:
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32, {},
                                {builder_->getInt32(static_cast<uint32_t>(count))});
      return;
    case Intrinsic::ThreadExit:
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_exit, llvm::ArrayRef<llvm::Type *>{},
                                llvm::ArrayRef<llvm::Value *>{});
      return;
    case Intrinsic::ClusterBarrier:
      // Every thread of the cluster's blocks: this thread's shared-memory
      // accesses (and the MMAs its wgmma wait completed) come before the
      // others pass, so a peer may then overwrite a slot this block read.
      inline_ptx("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;", "", {});
      return;
    default:
      internal_error("intrinsic ", intrinsic_name(which), " does not control a thread");
    }
  }

  // The mbarriers and the TMA have intrinsics in LLVM 22, but inline PTX
  // keeps their operands plain 32-bit shared addresses, which is what the
  // instructions take. Each clobbers memory, so no shared access moves
  // across it.
  void emit_mbarrier(Intrinsic which, llvm::Value *barrier, llvm::Value *operand) override {
    llvm::Value *address = barrier ? shared_address(barrier) : nullptr;
    switch (which) {
    case Intrinsic::MbarrierInit:
      inline_ptx("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", {address, operand});
      return;
    case Intrinsic::MbarrierInitFence:
      // Makes the initialized barriers visible to the TMA (the async proxy).
      inline_ptx("fence.mbarrier_init.release.cluster;", "", {});
      return;
    case Intrinsic::MbarrierExpectTx:
      inline_ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r", {address, operand});
      return;
    case Intrinsic::MbarrierWait:
      // Labels are local to the braces, so every copy of the loop may
      // repeat them.
      inline_ptx("{\n.reg .pred done;\nwait:\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
                 "@!done bra wait;\n}",
                 "r,r", {address, operand});
      return;
    case Intrinsic::MbarrierInval:
      inline_ptx("mbarrier.inval.shared::cta.b64 [$0];", "r", {address});
      return;
    case Intrinsic::MbarrierArrive: {
      // Release semantics (the default): this thread's reads of the slot,
      // and the MMAs its wgmma wait completed, come before the arrival.
      if (!operand) {
        inline_ptx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {address});
        return;
      }
      // In every block of the cluster (rank r's copy of the barrier, by
      // mapa): the peer's multicast copy that refills the slot waits for
      // it. The slot's reads are complete (the wgmma wait before), so the
      // default (release at the block's scope) orders enough; release at
      // the cluster's scope costs a memory barrier per arrival, measured
      // on the H200 at 4096^3 as 0.371 ms against 0.250 without clusters.
      const auto *blocks = llvm::dyn_cast<llvm::ConstantInt>(operand);
      COALESCE_INTERNAL_ASSERT(blocks && blocks->getSExtValue() > 0, "mbarrier_arrive's blocks are not a constant");
      for (int64_t rank = 0; rank < blocks->getSExtValue(); ++rank)
        inline_ptx("{\n.reg .b32 peer;\nmapa.shared::cluster.u32 peer, $0, $1;\n"
                   "mbarrier.arrive.shared::cluster.b64 _, [peer];\n}",
                   "r,r", {address, builder_->getInt32(static_cast<uint32_t>(rank))});
      return;
    }
    default:
      internal_error("intrinsic ", intrinsic_name(which), " is not an mbarrier operation");
    }
  }

  // One TMA box into shared memory, its bytes counted on the barrier. The
  // coordinates go innermost first, as the tensor map's dimensions do.
  //
  // Multicast (op->multicast blocks): this block, rank r of its cluster,
  // copies rows [r R / m, (r + 1) R / m) of the box to the same place in
  // the shared memory of every block of the cluster (the mask), each of
  // whose barriers at this one's address counts the bytes. The part starts
  // R / m rows of 128 bytes further, a whole number of swizzle atoms, so it
  // lands swizzled as the whole box would.
  void emit_tensor_copy(const TensorCopy *op) override {
    int map = tensor_map_index(*kernel_, op->input, op->issued_box());
    COALESCE_INTERNAL_ASSERT(map >= 0 && op->origin.size() == 2, "tensor copy of '", op->input,
                             "' without its tensor map");
    const auto *destination = op->destination.as<Load>();
    const auto *barrier = op->barrier.as<Load>();
    llvm::Value *to = shared_address(buffer_element(destination->buffer, destination->indices, destination->type));
    llvm::Value *on = shared_address(buffer_element(barrier->buffer, barrier->indices, barrier->type));
    llvm::Value *tensor_map =
        builder_->CreatePtrToInt(function_->getArg(tensor_map_base_ + static_cast<unsigned>(map)), builder_->getInt64Ty());
    llvm::Value *row = codegen(op->origin[0]);
    if (op->multicast == 1) {
      inline_ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, "
                 "$3}], [$4];",
                 "r,l,r,r,r", {to, tensor_map, codegen(op->origin[1]), row, on});
      return;
    }
    const int rows = op->issued_box().front();
    const int row_bytes = op->box[1] * destination->type.bytes();
    llvm::Value *rank = builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank,
                                                  llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
    llvm::Value *first = builder_->CreateMul(rank, builder_->getInt32(rows));
    row = builder_->CreateAdd(row, first);
    to = builder_->CreateAdd(to, builder_->CreateMul(first, builder_->getInt32(row_bytes)));
    llvm::Value *mask = builder_->getInt16(static_cast<uint16_t>((1u << op->multicast) - 1));
    inline_ptx("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
               "[$0], [$1, {$2, $3}], [$4], $5;",
               "r,l,r,r,r,h", {to, tensor_map, codegen(op->origin[1]), row, on, mask});
  }

  void emit_async_commit() override {
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{});
  }
  void emit_async_wait_group(int pending) override {
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{builder_->getInt32(pending)});
  }
  void emit_async_wait() override {
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{});
  }

  void emit_barrier(int threads) override {
    if (threads > 0) {
      // bar.sync 1, threads: the threads other than the producer warps,
      // which never reach it (barrier 0 stays the whole block's).
      builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
                                {builder_->getInt32(1), builder_->getInt32(threads)});
      return;
    }
    // bar.sync 0, as __syncthreads(); llvm.nvvm.barrier0 is its old name.
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {},
                              {builder_->getInt32(0)});
  }

  // The pattern of cooperative groups' grid sync: the block's stores, a
  // barrier, then one thread publishes them (fence at GPU scope) and counts
  // the arrival; the last block's thread fences again before the barrier
  // that releases its threads to read the other blocks' stores.
  llvm::Value *emit_last_arrival(llvm::Value *counter, int arrivals) override {
    llvm::SyncScope::ID gpu_scope = context_.getOrInsertSyncScopeID("device");
    llvm::Type *i32 = builder_->getInt32Ty();
    if (!arrival_flag_)
      arrival_flag_ = new llvm::GlobalVariable(module_, i32, false, llvm::GlobalValue::InternalLinkage,
                                               llvm::UndefValue::get(i32), "last_arrival_flag", nullptr,
                                               llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
    emit_barrier(0);
    auto read = [&](llvm::Intrinsic::ID id) {
      return builder_->CreateIntrinsic(id, llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
    };
    llvm::Value *tid = builder_->CreateOr(
        builder_->CreateOr(read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y)),
        read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z));
    llvm::BasicBlock *count = llvm::BasicBlock::Create(context_, "arrival_count", function_);
    llvm::BasicBlock *join = llvm::BasicBlock::Create(context_, "arrival_join", function_);
    builder_->CreateCondBr(builder_->CreateICmpEQ(tid, builder_->getInt32(0)), count, join);
    builder_->SetInsertPoint(count);
    builder_->CreateFence(llvm::AtomicOrdering::AcquireRelease, gpu_scope);
    llvm::Value *before = builder_->CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, builder_->getInt32(1),
                                                    llvm::Align(4), llvm::AtomicOrdering::AcquireRelease, gpu_scope);
    llvm::Value *last = builder_->CreateICmpEQ(before, builder_->getInt32(arrivals - 1));
    // The last arrival takes the count back to 0 for the next launch; no
    // other block of this tile touches it again in this one.
    llvm::BasicBlock *reset = llvm::BasicBlock::Create(context_, "arrival_reset", function_);
    llvm::BasicBlock *counted = llvm::BasicBlock::Create(context_, "arrival_counted", function_);
    builder_->CreateCondBr(last, reset, counted);
    builder_->SetInsertPoint(reset);
    builder_->CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, counter, builder_->getInt32(0), llvm::Align(4),
                              llvm::AtomicOrdering::Monotonic, gpu_scope);
    builder_->CreateBr(counted);
    builder_->SetInsertPoint(counted);
    builder_->CreateFence(llvm::AtomicOrdering::AcquireRelease, gpu_scope);
    builder_->CreateAlignedStore(builder_->CreateZExt(last, i32), arrival_flag_, llvm::Align(4));
    builder_->CreateBr(join);
    builder_->SetInsertPoint(join);
    emit_barrier(0);
    llvm::Value *flag = builder_->CreateAlignedLoad(i32, arrival_flag_, llvm::Align(4));
    // A kernel makes one arrival, so the flag is not written again while a
    // thread may still read it.
    return builder_->CreateICmpNE(flag, builder_->getInt32(0));
  }

  void emit_atomic_add(llvm::Value *address, llvm::Value *value) override {
    builder_->CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, address, value, llvm::Align(4),
                              llvm::AtomicOrdering::Monotonic, context_.getOrInsertSyncScopeID("device"));
  }

  llvm::Value *allocate_buffer(const Allocate *op, int64_t elements) override {
    llvm::Type *element = llvm_type_of(op->type);
    switch (op->memory) {
    case MemoryType::Shared: {
      if (dynamic_shared_bytes(*kernel_) > 0) {
        // Dynamic shared memory: one extern array per kernel, each tile at
        // its offset (scheduler/SharedTileLayout.h: tiles that never live
        // side by side share bytes; the kernel's shared_bytes, which the
        // launch passes, is the layout's end).
        if (!dynamic_shared_) {
          auto *type = llvm::ArrayType::get(builder_->getInt8Ty(), 0);
          dynamic_shared_ = new llvm::GlobalVariable(module_, type, false, llvm::GlobalValue::ExternalLinkage,
                                                     nullptr, kernel_->name + "_dynamic_shared", nullptr,
                                                     llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
          dynamic_shared_->setAlignment(llvm::Align(kernel_->shared_alignment));
        }
        auto offset = kernel_->shared_offsets.find(op->name);
        COALESCE_INTERNAL_ASSERT(offset != kernel_->shared_offsets.end(), "kernel '", kernel_->name,
                                 "' has no offset for its shared tile '", op->name, "'");
        int64_t bytes = elements * std::max(1, op->type.bytes());
        COALESCE_INTERNAL_ASSERT(offset->second + bytes <= kernel_->shared_bytes, "kernel '", kernel_->name,
                                 "' has a shared tile '", op->name, "' past its ", kernel_->shared_bytes, " bytes");
        return builder_->CreateConstInBoundsGEP1_64(builder_->getInt8Ty(), dynamic_shared_,
                                                    static_cast<uint64_t>(offset->second));
      }
      // Static shared memory: one array per allocation, named after the
      // kernel so two kernels' tiles never share a symbol.
      auto *storage = new llvm::GlobalVariable(
          module_, llvm::ArrayType::get(element, elements), false,
          llvm::GlobalValue::InternalLinkage,
          llvm::UndefValue::get(llvm::ArrayType::get(element, elements)),
          kernel_symbol(kernel_->name) + "_" + op->name, nullptr, llvm::GlobalValue::NotThreadLocal,
          kSharedAddressSpace);
      storage->setAlignment(llvm::Align(kernel_->shared_alignment));
      return storage;
    }
    case MemoryType::Register:
    case MemoryType::Auto:
      // Per-thread local array; SROA turns it into registers when every
      // index is a constant, as lowering guarantees for Register.
      return entry_alloca(element, elements, op->name);
    case MemoryType::Heap:
      internal_error("heap allocation '", op->name, "' in GPU kernel '", kernel_->name, "'");
    }
    internal_error("unknown memory type of '", op->name, "'");
  }

  void emit_for(const For *op) override {
    if (op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread)
      internal_error(for_kind_name(op->for_kind), " loop '", op->name, "' in GPU kernel '",
                     kernel_->name, "': GPU mapping replaces them by thread and block indices");
    CodeGenLLVM::emit_for(op);
  }

private:
  // A pointer into shared memory as the 32-bit address PTX's shared-space
  // instructions take.
  llvm::Value *shared_address(llvm::Value *pointer) {
    llvm::Value *shared = builder_->CreateAddrSpaceCast(pointer, builder_->getPtrTy(kSharedAddressSpace));
    return builder_->CreatePtrToInt(shared, builder_->getInt32Ty());
  }

  // A PTX instruction with side effects that clobbers memory.
  void inline_ptx(const std::string &text, const std::string &constraints, const std::vector<llvm::Value *> &args) {
    std::vector<llvm::Type *> types;
    for (llvm::Value *arg : args)
      types.push_back(arg->getType());
    auto *type = llvm::FunctionType::get(builder_->getVoidTy(), types, false);
    std::string all = constraints.empty() ? "~{memory}" : constraints + ",~{memory}";
    builder_->CreateCall(type, llvm::InlineAsm::get(type, text, all, /*hasSideEffects=*/true), args);
  }

  // The shared-memory address of an MMA operand's element (mma.m, mma.n,
  // mma.k): what ldmatrix and the warpgroup MMA's descriptors take.
  llvm::Value *shared_operand_address(const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k) {
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

  // The factor of a WarpMma's product that reads A: the one that depends on
  // the row (mma.m), which tensorize_mma puts first.
  // Whether the operand reads a shared-memory buffer (what ldmatrix reads).
  bool in_shared(const Expr &operand) {
    const auto *load = unwrap(operand).as<Load>();
    llvm::Value *base = load ? buffers_.find(load->buffer) : nullptr;
    return base && base->getType()->isPointerTy() && base->getType()->getPointerAddressSpace() == kSharedAddressSpace;
  }
  static const Expr &a_of(const Mul *mul) { return mul->a; }
  static const Expr &b_of(const Mul *mul) { return mul->b; }
  // The operand as it is stored: a 16-bit value without its widening to
  // f32, an f32 without its rounding to tf32 (the instruction does both).
  static Expr unwrap(const Expr &operand) {
    if (const auto *cast = operand.as<Cast>())
      return cast->value;
    if (const auto *call = operand.as<Call>(); call && call->intrinsic == Intrinsic::RoundToTf32)
      return call->args.at(0);
    return operand;
  }

  // The runtime looks kernels up by name, so the name must survive into the
  // PTX unchanged: a valid PTX identifier that the backend will not rename.
  static void check_kernel_name(const std::string &name) {
    bool valid = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name)
      valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!valid)
      internal_error("GPU kernel name '", name, "' is not a C identifier");
  }

  const GpuKernel *kernel_ = nullptr;
  unsigned tensor_map_base_ = 0; ///< the parameter of the kernel's first tensor map
  bool pending_wgmma_fence_ = false; ///< a wgmma_fence waits for the next MMA's instruction block
  llvm::GlobalVariable *arrival_flag_ = nullptr; ///< last_arrival's answer, shared by a block's threads
  llvm::GlobalVariable *dynamic_shared_ = nullptr; ///< the kernel's extern shared array, if it has one
  bool waits_for_previous_ = false, lets_next_start_ = false; ///< the kernel's grid dependencies
};

/// Emits, verifies and (when asked) links libdevice into and optimizes the
/// module for `program`.
std::unique_ptr<llvm::Module> build_module(const GpuProgram &program, const GpuTarget &target,
                                           llvm::TargetMachine &machine, llvm::LLVMContext &context, bool optimize) {
  auto module = std::make_unique<llvm::Module>(program.name, context);
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  // libdevice asks __nvvm_reflect whether to flush denormals; answer no, so
  // results match the host's IEEE arithmetic.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  {
    PhaseTimer timer("emit LLVM IR");
    CodeGenPTX codegen(*module);
    codegen.emit(program, target.has_grid_dependencies());
  }
  {
    PhaseTimer timer("verify");
    verify_module(*module, "GPU");
  }
  if (!optimize)
    return module;
  {
    PhaseTimer timer("link libdevice");
    link_libdevice(*module);
  }
  {
    PhaseTimer timer("verify");
    verify_module(*module, "GPU (with libdevice)");
  }
  if (const char *passes = std::getenv("COALESCE_GPU_PASSES"); passes && *passes)
    run_pass_pipeline(*module, machine, passes);
  else
    optimize_module(*module, machine);
  return module;
}

std::string emit_ptx(const GpuProgram &program, const GpuTarget &target, bool annotated) {
  check_target_instructions(program, target);
  std::unique_ptr<llvm::TargetMachine> machine;
  {
    PhaseTimer timer("NVPTX target machine");
    machine = nvptx_machine(target, short_shared_pointers(program, target));
  }
  // Verbose assembly: the AsmPrinter writes each block's IR name after its label.
  machine->Options.MCOptions.AsmVerbose = annotated;
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = build_module(program, target, *machine, context, true);

  PhaseTimer timer("NVPTX code generation");
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager emit;
  if (machine->addPassesToEmitFile(emit, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    internal_error("the NVPTX backend cannot emit assembly");
  emit.run(*module);
  return ptx.str().str();
}

} // namespace

std::string compile_to_ptx(const GpuProgram &program, const GpuTarget &target) {
  return emit_ptx(program, target, /*annotated=*/false);
}

std::string compile_to_annotated_ptx(const GpuProgram &program, const GpuTarget &target) {
  return emit_ptx(program, target, /*annotated=*/true);
}

std::string emit_gpu_llvm_ir(const GpuProgram &program, const GpuTarget &target, bool optimize) {
  check_target_instructions(program, target);
  std::unique_ptr<llvm::TargetMachine> machine = nvptx_machine(target, short_shared_pointers(program, target));
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = build_module(program, target, *machine, context, optimize);
  std::string text;
  llvm::raw_string_ostream out(text);
  module->print(out, nullptr);
  return out.str();
}

} // namespace coalesce
