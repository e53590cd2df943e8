#include "codegen/CodeGenPTX.h"

#include "codegen/CheckTargetInstructions.h"

#include "codegen/CodeGenPTXEmitter.h"
#include "codegen/GpuErf.h"
#include "codegen/GpuPassChoices.h"
#include "codegen/NvptxTarget.h"
#include "codegen/OptimizeModule.h"
#include "codegen/PtxAssembler.h"
#include "codegen/Symbols.h"
#include "dsl/CompileProfile.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <cstdlib>

namespace coalesce {

namespace {

constexpr int kTensorMapBytes = 128, kTensorMapAlignment = 64; // CUtensorMap

} // namespace

void CodeGenPTX::emit(const GpuProgram &program, bool grid_dependencies) {
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const GpuKernel &kernel = program.kernels[k];
    // The warpgroup MMAs' accumulator buffers, and their tiles (a buffer
    // and the indices of an instruction's update: one per MMA of a k16).
    struct Accumulators : IRVisitor {
      std::set<std::string> names, tiles;
      using IRVisitor::visit;
      void visit(const WarpMma *op) override {
        if (is_warpgroup_mma(op->kind))
          if (const auto *update = op->update.as<Store>()) {
            names.insert(update->buffer);
            std::string tile = update->buffer;
            for (const Expr &index : update->indices)
              tile += "," + to_string(index);
            tiles.insert(tile);
          }
        IRVisitor::visit(op);
      }
    } accumulators;
    accumulators.visit_stmt(kernel.body);
    // Only where a k step's MMAs update several tiles (stored_value).
    warpgroup_accumulators_.clear();
    if (accumulators.tiles.size() > 1)
      warpgroup_accumulators_ = std::move(accumulators.names);
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
    llvm::Function *function =
        emit_function(kernel_symbol(kernel.name), program.args, kernel.body, llvm::GlobalValue::ExternalLinkage, maps);
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
    function->addFnAttr("nvvm.maxntid", str_cat(kernel.block[0], ",", kernel.block[1], ",", kernel.block[2]));
    // Blocks in clusters (gpu_cluster): `.explicitcluster` and
    // `.reqnctapercluster`, so that a plain launch makes the clusters.
    if (kernel.cluster_blocks() > 1)
      function->addFnAttr("nvvm.cluster_dim",
                          str_cat(kernel.cluster[0], ",", kernel.cluster[1], ",", kernel.cluster[2]));
  }
  kernel_ = nullptr;
}

llvm::Value *CodeGenPTX::stored_value(const std::string &buffer, llvm::Value *value) {
  if (!warpgroup_accumulators_.count(buffer) || !value->getType()->isFloatTy())
    return value;
  auto *type = llvm::FunctionType::get(value->getType(), {value->getType()}, false);
  return builder_->CreateCall(type, llvm::InlineAsm::get(type, "mov.b32 $0, $1;", "=f,f", /*hasSideEffects=*/true),
                              {value});
}

void CodeGenPTX::emit_prologue() {
  if (lets_next_start_)
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_griddepcontrol_launch_dependents, llvm::ArrayRef<llvm::Type *>{},
                              {});
  if (waits_for_previous_)
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_griddepcontrol_wait, llvm::ArrayRef<llvm::Type *>{}, {});
}

llvm::Value *CodeGenPTX::emit_widen(Type from, llvm::Value *value) {
  if (!from.is_fp8())
    return CodeGenLLVM::emit_widen(from, value);
  std::string text = str_cat("cvt.rn.f16x2.", fp8_ptx_name(from), "x2 $0, $1;");
  llvm::Value *pair =
      pure_ptx(text, "=r,h", builder_->getInt32Ty(), {builder_->CreateZExt(value, builder_->getInt16Ty())});
  llvm::Value *half =
      builder_->CreateBitCast(builder_->CreateTrunc(pair, builder_->getInt16Ty()), builder_->getHalfTy());
  return builder_->CreateFPExt(half, builder_->getFloatTy());
}

llvm::Value *CodeGenPTX::emit_narrow(Type to, llvm::Value *value) {
  if (!to.is_fp8())
    return CodeGenLLVM::emit_narrow(to, value);
  std::string text = str_cat("cvt.rn.satfinite.", fp8_ptx_name(to), "x2.f32 $0, $1, $2;");
  llvm::Value *pair =
      pure_ptx(text, "=h,f,f", builder_->getInt16Ty(), {llvm::ConstantFP::get(builder_->getFloatTy(), 0.0), value});
  return builder_->CreateTrunc(pair, builder_->getInt8Ty());
}

llvm::Value *CodeGenPTX::pure_ptx(const std::string &text, const std::string &constraints, llvm::Type *result,
                                  const std::vector<llvm::Value *> &args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *arg : args)
    types.push_back(arg->getType());
  auto *type = llvm::FunctionType::get(result, types, false);
  return builder_->CreateCall(type, llvm::InlineAsm::get(type, text, constraints, /*hasSideEffects=*/false), args);
}

llvm::FunctionCallee CodeGenPTX::math_function(Intrinsic math, Type type) {
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

llvm::Value *CodeGenPTX::emit_target_intrinsic(const Call *op) {
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

void CodeGenPTX::emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *in_bounds) {
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

void CodeGenPTX::emit_async_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *count,
                                        int vector) {
  COALESCE_INTERNAL_ASSERT(vector * type.bytes() == 16, "a vector copy is 16 bytes");
  llvm::Value *shared = builder_->CreateAddrSpaceCast(destination, builder_->getPtrTy(kSharedAddressSpace));
  llvm::Value *global = builder_->CreateAddrSpaceCast(source, builder_->getPtrTy(1));
  llvm::Value *bytes = builder_->CreateMul(count, builder_->getInt32(type.bytes()));
  builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s, llvm::ArrayRef<llvm::Type *>{},
                            llvm::ArrayRef<llvm::Value *>{shared, global, bytes});
}

llvm::Align CodeGenPTX::vector_copy_alignment(Type type, int lanes) {
  return llvm::Align(static_cast<uint64_t>(std::max(1, type.bytes()) * lanes));
}

void CodeGenPTX::emit_async_proxy_sync(Intrinsic which, int pending) {
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
  default: internal_error("intrinsic ", intrinsic_name(which), " is not an async-proxy synchronization");
  }
}

void CodeGenPTX::emit_thread_control(Intrinsic which, int count) {
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
  default: internal_error("intrinsic ", intrinsic_name(which), " does not control a thread");
  }
}

void CodeGenPTX::emit_group_barrier(Intrinsic which, llvm::Value *id, int threads) {
  // bar.sync / bar.arrive id, threads: barrier 0 is the whole block's, 1
  // the MMA warps' own (emit_barrier); the groups take 2 and up.
  COALESCE_INTERNAL_ASSERT(threads % 32 == 0, "a group barrier of ", threads, " threads");
  const auto intrinsic = which == Intrinsic::GroupBarrierSync ? llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count
                                                              : llvm::Intrinsic::nvvm_barrier_cta_arrive_aligned_count;
  builder_->CreateIntrinsic(intrinsic, {}, {id, builder_->getInt32(threads)});
}

void CodeGenPTX::emit_mbarrier(Intrinsic which, llvm::Value *barrier, llvm::Value *operand) {
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
  case Intrinsic::MbarrierInval: inline_ptx("mbarrier.inval.shared::cta.b64 [$0];", "r", {address}); return;
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
  default: internal_error("intrinsic ", intrinsic_name(which), " is not an mbarrier operation");
  }
}

void CodeGenPTX::emit_tensor_copy(const TensorCopy *op) {
  int map = tensor_map_index(*kernel_, op->input, op->issued_box());
  const size_t rank = op->origin.size();
  COALESCE_INTERNAL_ASSERT(map >= 0 && rank >= 2 && rank <= 5, "tensor copy of '", op->input,
                           "' without its tensor map");
  const auto *destination = op->destination.as<Load>();
  const auto *barrier = op->barrier.as<Load>();
  llvm::Value *to = shared_address(buffer_element(destination->buffer, destination->indices, destination->type));
  llvm::Value *on = shared_address(buffer_element(barrier->buffer, barrier->indices, barrier->type));
  llvm::Value *tensor_map = builder_->CreatePtrToInt(function_->getArg(tensor_map_base_ + static_cast<unsigned>(map)),
                                                     builder_->getInt64Ty());
  // The coordinates innermost first, as the tensor map lists its
  // dimensions: the column, the row, then a batch's.
  std::vector<llvm::Value *> coordinates(rank);
  coordinates[1] = codegen(op->origin[rank - 2]);
  for (size_t d = 2; d < rank; ++d)
    coordinates[d] = codegen(op->origin[rank - 1 - d]);
  if (op->multicast > 1) {
    const int rows = op->issued_box()[rank - 2];
    const int row_bytes = op->box[rank - 1] * destination->type.bytes();
    llvm::Value *cta = builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_cluster_ctarank,
                                                 llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
    llvm::Value *first = builder_->CreateMul(cta, builder_->getInt32(rows));
    coordinates[1] = builder_->CreateAdd(coordinates[1], first);
    to = builder_->CreateAdd(to, builder_->CreateMul(first, builder_->getInt32(row_bytes)));
  }
  coordinates[0] = codegen(op->origin[rank - 1]);
  // [$0] the destination, [$1, {$2, ...}] the map and coordinates, [$n] the barrier.
  std::string list, constraints = "r,l";
  std::vector<llvm::Value *> operands = {to, tensor_map};
  for (size_t d = 0; d < rank; ++d) {
    list += str_cat(d ? ", " : "", "$", d + 2);
    constraints += ",r";
    operands.push_back(coordinates[d]);
  }
  operands.push_back(on);
  constraints += ",r";
  std::string copy =
      str_cat("cp.async.bulk.tensor.", rank, "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes");
  if (op->multicast == 1) {
    inline_ptx(str_cat(copy, " [$0], [$1, {", list, "}], [$", rank + 2, "];"), constraints, operands);
    return;
  }
  operands.push_back(builder_->getInt16(static_cast<uint16_t>((1u << op->multicast) - 1)));
  inline_ptx(str_cat(copy, ".multicast::cluster [$0], [$1, {", list, "}], [$", rank + 2, "], $", rank + 3, ";"),
             constraints + ",h", operands);
}

void CodeGenPTX::emit_async_commit() {
  builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, llvm::ArrayRef<llvm::Type *>{},
                            llvm::ArrayRef<llvm::Value *>{});
}

void CodeGenPTX::emit_async_wait_group(int pending) {
  builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, llvm::ArrayRef<llvm::Type *>{},
                            llvm::ArrayRef<llvm::Value *>{builder_->getInt32(pending)});
}

void CodeGenPTX::emit_async_wait() {
  builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, llvm::ArrayRef<llvm::Type *>{},
                            llvm::ArrayRef<llvm::Value *>{});
}

void CodeGenPTX::emit_barrier(int threads) {
  if (threads > 0) {
    // bar.sync 1, threads: the threads other than the producer warps,
    // which never reach it (barrier 0 stays the whole block's).
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
                              {builder_->getInt32(1), builder_->getInt32(threads)});
    return;
  }
  // bar.sync 0, as __syncthreads(); llvm.nvvm.barrier0 is its old name.
  builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {builder_->getInt32(0)});
}

llvm::Value *CodeGenPTX::emit_last_arrival(llvm::Value *counter, llvm::Value *arrivals) {
  llvm::SyncScope::ID gpu_scope = context_.getOrInsertSyncScopeID("device");
  llvm::Type *i32 = builder_->getInt32Ty();
  if (!arrival_flag_)
    arrival_flag_ =
        new llvm::GlobalVariable(module_, i32, false, llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(i32),
                                 "last_arrival_flag", nullptr, llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
  emit_barrier(0);
  auto read = [&](llvm::Intrinsic::ID id) {
    return builder_->CreateIntrinsic(id, llvm::ArrayRef<llvm::Type *>{}, llvm::ArrayRef<llvm::Value *>{});
  };
  llvm::Value *tid = builder_->CreateOr(builder_->CreateOr(read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x),
                                                           read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y)),
                                        read(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z));
  llvm::BasicBlock *count = llvm::BasicBlock::Create(context_, "arrival_count", function_);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(context_, "arrival_join", function_);
  builder_->CreateCondBr(builder_->CreateICmpEQ(tid, builder_->getInt32(0)), count, join);
  builder_->SetInsertPoint(count);
  builder_->CreateFence(llvm::AtomicOrdering::AcquireRelease, gpu_scope);
  llvm::Value *before = builder_->CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, builder_->getInt32(1),
                                                  llvm::Align(4), llvm::AtomicOrdering::AcquireRelease, gpu_scope);
  llvm::Value *last = builder_->CreateICmpEQ(before, builder_->CreateSub(arrivals, builder_->getInt32(1)));
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

void CodeGenPTX::emit_atomic_add(llvm::Value *address, llvm::Value *value) {
  builder_->CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, address, value, llvm::Align(4), llvm::AtomicOrdering::Monotonic,
                            context_.getOrInsertSyncScopeID("device"));
}

llvm::Value *CodeGenPTX::allocate_buffer(const Allocate *op, int64_t elements) {
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
        dynamic_shared_ = new llvm::GlobalVariable(module_, type, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                                   kernel_->name + "_dynamic_shared", nullptr,
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
        module_, llvm::ArrayType::get(element, elements), false, llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(llvm::ArrayType::get(element, elements)), kernel_symbol(kernel_->name) + "_" + op->name,
        nullptr, llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
    storage->setAlignment(llvm::Align(kernel_->shared_alignment));
    return storage;
  }
  case MemoryType::Register:
  case MemoryType::Auto:
    // Per-thread local array; SROA turns it into registers when every
    // index is a constant, as lowering guarantees for Register.
    return entry_alloca(element, elements, op->name);
  case MemoryType::Heap: internal_error("heap allocation '", op->name, "' in GPU kernel '", kernel_->name, "'");
  }
  internal_error("unknown memory type of '", op->name, "'");
}

void CodeGenPTX::emit_for(const For *op) {
  if (op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread)
    internal_error(for_kind_name(op->for_kind), " loop '", op->name, "' in GPU kernel '", kernel_->name,
                   "': GPU mapping replaces them by thread and block indices");
  CodeGenLLVM::emit_for(op);
}

llvm::Value *CodeGenPTX::shared_address(llvm::Value *pointer) {
  llvm::Value *shared = builder_->CreateAddrSpaceCast(pointer, builder_->getPtrTy(kSharedAddressSpace));
  return builder_->CreatePtrToInt(shared, builder_->getInt32Ty());
}

void CodeGenPTX::inline_ptx(const std::string &text, const std::string &constraints,
                            const std::vector<llvm::Value *> &args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *arg : args)
    types.push_back(arg->getType());
  auto *type = llvm::FunctionType::get(builder_->getVoidTy(), types, false);
  std::string all = constraints.empty() ? "~{memory}" : constraints + ",~{memory}";
  builder_->CreateCall(type, llvm::InlineAsm::get(type, text, all, /*hasSideEffects=*/true), args);
}

void CodeGenPTX::check_kernel_name(const std::string &name) {
  bool valid = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name)
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!valid)
    internal_error("GPU kernel name '", name, "' is not a C identifier");
}

namespace {

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
  SkippedNvptxPasses skipped(context);
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
