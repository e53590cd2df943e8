// CodeGenLLVM's statements (loops, stores, allocations, branches), the
// target hooks' host defaults, and the types; the expressions are in
// CodeGenLLVMExpressions.cpp.

#include "codegen/CodeGenLLVM.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/NarrowFloat.h"

#include <llvm/ADT/StringSet.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/MDBuilder.h>

namespace coalesce {

namespace {

/// Buffers over this size go to the heap on the host: the JIT'd code runs
/// on the caller's stack, which may be a small thread stack.
constexpr int64_t kMaxStackBytes = 64 * 1024;

/// The buffers a statement stores to; the others may be marked readonly,
/// which lets NVPTX use the non-coherent (read-only cache) loads.
class StoredBuffers : public IRVisitor {
public:
  llvm::StringSet<> names;

protected:
  void visit(const Store *op) override {
    names.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    // last_arrival writes the counter it is given.
    if (op->intrinsic == Intrinsic::LastArrival)
      if (const auto *counter = op->args[0].as<Load>())
        names.insert(counter->buffer);
    IRVisitor::visit(op);
  }
};

} // namespace

void CodeGenLLVM::Scope::pop(const std::string &name) {
  auto it = bindings_.find(name);
  COALESCE_INTERNAL_ASSERT(it != bindings_.end() && !it->second.empty(), "popping unbound '",
                           name, "'");
  it->second.pop_back();
}

llvm::Value *CodeGenLLVM::Scope::find(const std::string &name) const {
  auto it = bindings_.find(name);
  if (it == bindings_.end() || it->second.empty())
    return nullptr;
  return it->second.back();
}

CodeGenLLVM::CodeGenLLVM(llvm::Module &module)
    : module_(module), context_(module.getContext()),
      builder_(std::make_unique<llvm::IRBuilder<>>(module.getContext())) {
  // `contract` on every float op lets the backend fuse a*b+c into one FMA
  // (FFMA on the GPU): the inner product of a GEMM is nothing else.
  llvm::FastMathFlags flags;
  flags.setAllowContract(true);
  builder_->setFastMathFlags(flags);
}

CodeGenLLVM::~CodeGenLLVM() = default;

llvm::Type *CodeGenLLVM::llvm_type_of(Type type) const {
  switch (type.code) {
  case Type::Code::Bool: return llvm::Type::getInt1Ty(context_);
  case Type::Code::Int:
  case Type::Code::UInt: return llvm::Type::getIntNTy(context_, type.bits);
  case Type::Code::E4M3:
  case Type::Code::E5M2:
    // Their bits on every target: LLVM has no 8-bit float type; emit_widen
    // and emit_narrow convert them.
    return llvm::Type::getInt8Ty(context_);
  case Type::Code::BFloat:
    COALESCE_INTERNAL_ASSERT(type.bits == 16, "no LLVM type for ", type);
    return narrow_floats_as_bits() ? llvm::Type::getInt16Ty(context_) : llvm::Type::getBFloatTy(context_);
  case Type::Code::Float:
    if (type.bits == 16)
      return narrow_floats_as_bits() ? llvm::Type::getInt16Ty(context_) : llvm::Type::getHalfTy(context_);
    if (type.bits == 32)
      return llvm::Type::getFloatTy(context_);
    if (type.bits == 64)
      return llvm::Type::getDoubleTy(context_);
    internal_error("no LLVM type for ", type);
  }
  internal_error("no LLVM type for ", type);
}

llvm::Function *CodeGenLLVM::emit_function(const std::string &name,
                                           const std::vector<Argument> &args, const Stmt &body,
                                           llvm::GlobalValue::LinkageTypes linkage,
                                           const std::vector<llvm::Type *> &trailing) {
  std::vector<llvm::Type *> params;
  for (const Argument &arg : args)
    params.push_back(arg.is_buffer() ? llvm::PointerType::getUnqual(context_)
                                     : llvm_type_of(arg.type));
  params.insert(params.end(), trailing.begin(), trailing.end());
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context_), params, false);
  llvm::Function *function = llvm::Function::Create(type, linkage, name, module_);
  function->addFnAttr(llvm::Attribute::NoUnwind);

  StoredBuffers stored;
  stored.visit_stmt(body);
  for (size_t i = 0; i < args.size(); ++i) {
    function->getArg(i)->setName(args[i].name);
    if (!args[i].is_buffer())
      continue;
    // The pipeline's buffers never overlap: this is what lets loads be
    // hoisted out of loops and kept in registers across stores.
    // Not a workspace: other blocks write it while this one runs, and its
    // reads after last_arrival must not be moved before it or cached.
    if (args[i].is_workspace)
      continue;
    function->addParamAttr(i, llvm::Attribute::NoAlias);
    if (!stored.names.contains(args[i].name))
      function->addParamAttr(i, llvm::Attribute::ReadOnly);
  }

  function_ = function;
  builder_->SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", function));
  bind_arguments(function, args);
  emit_prologue();
  codegen(body);
  builder_->CreateRetVoid();
  for (const Argument &arg : args)
    (arg.is_buffer() ? buffers_ : variables_).pop(arg.name);
  function_ = nullptr;
  return function;
}

void CodeGenLLVM::bind_arguments(llvm::Function *function, const std::vector<Argument> &args) {
  for (size_t i = 0; i < args.size(); ++i)
    (args[i].is_buffer() ? buffers_ : variables_).push(args[i].name, function->getArg(i));
}

llvm::Value *CodeGenLLVM::codegen(const Expr &e) {
  COALESCE_INTERNAL_ASSERT(e.defined(), "codegen of an undefined expression");
  value_ = nullptr;
  visit_expr(e);
  COALESCE_INTERNAL_ASSERT(value_ != nullptr, "expression produced no value");
  return value_;
}

void CodeGenLLVM::codegen(const Stmt &s) {
  if (s.defined())
    visit_stmt(s);
}

// ------------------------------------------------------------------ hooks

llvm::Value *CodeGenLLVM::emit_target_intrinsic(const Call *op) {
  internal_error("intrinsic '", op->name, "' is not supported by this target");
}

llvm::Value *CodeGenLLVM::emit_widen(Type, llvm::Value *value) {
  return builder_->CreateFPExt(value, llvm::Type::getFloatTy(context_));
}

llvm::Value *CodeGenLLVM::emit_narrow(Type to, llvm::Value *value) {
  return builder_->CreateFPTrunc(value, llvm_type_of(to));
}

void CodeGenLLVM::emit_barrier(int) {}

void CodeGenLLVM::emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type,
                                  llvm::Value *in_bounds) {
  llvm::Type *element = llvm_type_of(type);
  llvm::Align align = module_.getDataLayout().getABITypeAlign(element);
  if (!in_bounds) {
    builder_->CreateAlignedStore(builder_->CreateAlignedLoad(element, source, align), destination, align);
    return;
  }
  // Read only where the predicate holds: where it does not, the element may
  // not exist (an empty input), and a load there is out of bounds.
  llvm::BasicBlock *read = llvm::BasicBlock::Create(context_, "copy_read", function_);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(context_, "copy_join", function_);
  llvm::BasicBlock *before = builder_->GetInsertBlock();
  builder_->CreateCondBr(in_bounds, read, join);
  builder_->SetInsertPoint(read);
  llvm::Value *loaded = builder_->CreateAlignedLoad(element, source, align);
  builder_->CreateBr(join);
  builder_->SetInsertPoint(join);
  llvm::PHINode *value = builder_->CreatePHI(element, 2);
  value->addIncoming(loaded, read);
  value->addIncoming(llvm::Constant::getNullValue(element), before);
  builder_->CreateAlignedStore(value, destination, align);
}

void CodeGenLLVM::emit_async_vector_copy(llvm::Value *destination, llvm::Value *source, Type type,
                                         llvm::Value *count, int vector) {
  llvm::Type *element = llvm_type_of(type);
  llvm::Align align = module_.getDataLayout().getABITypeAlign(element);
  // Element v reads source[min(v, count - 1)] (source[0] when count is 0,
  // which the lowering keeps inside the input), so nothing past the copied
  // elements is read; it keeps the value only when v < count.
  llvm::Value *last = builder_->CreateSelect(builder_->CreateICmpSGT(count, builder_->getInt32(0)),
                                             builder_->CreateSub(count, builder_->getInt32(1)), builder_->getInt32(0));
  for (int v = 0; v < vector; ++v) {
    llvm::Value *lane = builder_->getInt32(v);
    llvm::Value *from = builder_->CreateSelect(builder_->CreateICmpSLT(lane, last), lane, last);
    llvm::Value *value = builder_->CreateAlignedLoad(element, builder_->CreateInBoundsGEP(element, source, from), align);
    value = builder_->CreateSelect(builder_->CreateICmpSLT(lane, count), value, llvm::Constant::getNullValue(element));
    builder_->CreateAlignedStore(value, builder_->CreateInBoundsGEP(element, destination, lane), align);
  }
}

void CodeGenLLVM::emit_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, int lanes) {
  llvm::Type *vector = llvm::FixedVectorType::get(llvm_type_of(type), static_cast<unsigned>(lanes));
  llvm::Align align = vector_copy_alignment(type, lanes);
  builder_->CreateAlignedStore(builder_->CreateAlignedLoad(vector, source, align), destination, align);
}

llvm::Align CodeGenLLVM::vector_copy_alignment(Type type, int) {
  return module_.getDataLayout().getABITypeAlign(llvm_type_of(type));
}

void CodeGenLLVM::emit_warp_mma(const WarpMma *op) {
  // For each of this lane's elements, in register order: the sum over the
  // instruction's k steps, in order. A warpgroup MMA's lane holds the same
  // 4 elements in each 8-column block of its warp's 16 rows of the tile.
  // The elements are loops, not copies of the update: a 64 x 256 warpgroup
  // MMA has 128 elements per lane, and a tensor-core nest hundreds of MMAs,
  // so copies made the host's module (and its compile time) that many times
  // larger. Each element's sum is the same either way.
  const char *const element = "mma.e"; // the '.' keeps it apart from user names
  bool group = is_warpgroup_mma(op->kind);
  Expr v = Variable::make(Int(32), element);
  Expr fragment_row = v / 2, fragment_column = v % 2;
  Expr row = op->lane / 4 + 8 * fragment_row, column = (op->lane % 4) * 2 + fragment_column;
  if (group) {
    row = row + (op->warp % 4) * 16;
    column = column + Variable::make(Int(32), kMmaFragBlock) * 8;
  }
  Stmt steps = For::make(kMmaStep, 0, mma_k(op->kind), ForKind::Serial, op->update, -1, {}, LoopRole::MmaSteps);
  Stmt body = LetStmt::make(
      kMmaRow, row,
      LetStmt::make(kMmaColumn, column,
                    LetStmt::make(kMmaFragRow, fragment_row, LetStmt::make(kMmaFragColumn, fragment_column, steps))));
  Stmt elements = For::make(element, 0, 4, ForKind::Serial, body, -1, {}, LoopRole::MmaSteps);
  if (group)
    elements = For::make(kMmaFragBlock, 0, op->n / 8, ForKind::Serial, elements, -1, {}, LoopRole::MmaSteps);
  codegen(elements);
}

llvm::Value *CodeGenLLVM::round_to_tf32(llvm::Value *x) {
  llvm::Value *bits = builder_->CreateBitCast(x, builder_->getInt32Ty());
  // Adding half of the 13 dropped bits to the magnitude rounds to nearest,
  // ties away; infinities and NaNs (exponent all ones) stay as they are, as
  // cvt.rna.tf32.f32 keeps them, so a NaN stays a NaN.
  llvm::Value *rounded = builder_->CreateAnd(builder_->CreateAdd(bits, builder_->getInt32(0x1000)),
                                             builder_->getInt32(static_cast<int32_t>(0xFFFFE000u)));
  llvm::Value *exponent = builder_->CreateAnd(bits, builder_->getInt32(0x7F800000));
  llvm::Value *special = builder_->CreateICmpEQ(exponent, builder_->getInt32(0x7F800000));
  return builder_->CreateBitCast(builder_->CreateSelect(special, bits, rounded), x->getType());
}

llvm::Value *CodeGenLLVM::truncate_to_tf32(llvm::Value *x) {
  // The plain mask the tensor cores apply to an f32 operand: a NaN whose
  // payload lies only in the dropped bits becomes an infinity there, so it
  // does here.
  llvm::Value *bits = builder_->CreateBitCast(x, builder_->getInt32Ty());
  return builder_->CreateBitCast(builder_->CreateAnd(bits, builder_->getInt32(static_cast<int32_t>(0xFFFFE000u))),
                                 x->getType());
}

llvm::Value *CodeGenLLVM::emit_last_arrival(llvm::Value *counter, llvm::Value *arrivals) {
  llvm::Type *i32 = builder_->getInt32Ty();
  llvm::Value *count = builder_->CreateAdd(builder_->CreateAlignedLoad(i32, counter, llvm::Align(4)),
                                           builder_->getInt32(1));
  llvm::Value *last = builder_->CreateICmpEQ(count, arrivals);
  builder_->CreateAlignedStore(builder_->CreateSelect(last, builder_->getInt32(0), count), counter, llvm::Align(4));
  return last;
}

void CodeGenLLVM::emit_atomic_add(llvm::Value *address, llvm::Value *value) {
  llvm::Type *type = value->getType();
  llvm::Align align = module_.getDataLayout().getABITypeAlign(type);
  llvm::Value *old = builder_->CreateAlignedLoad(type, address, align);
  builder_->CreateAlignedStore(builder_->CreateFAdd(old, value), address, align);
}

void CodeGenLLVM::emit_async_wait() {}
void CodeGenLLVM::emit_async_proxy_sync(Intrinsic, int) {}

void CodeGenLLVM::emit_mbarrier(Intrinsic, llvm::Value *, llvm::Value *) {}
void CodeGenLLVM::emit_thread_control(Intrinsic, int) {}

void CodeGenLLVM::emit_tensor_copy(const TensorCopy *op) { codegen(op->copy); }
void CodeGenLLVM::emit_async_commit() {}
void CodeGenLLVM::emit_async_wait_group(int) {}

llvm::Value *CodeGenLLVM::allocate_buffer(const Allocate *op, int64_t elements) {
  llvm::Type *element = llvm_type_of(op->type);
  int64_t bytes = elements * std::max(1, op->type.bytes());
  if (bytes <= kMaxStackBytes)
    return entry_alloca(element, elements, op->name);
  llvm::Type *size_type = llvm::Type::getInt64Ty(context_);
  llvm::FunctionCallee malloc_fn =
      module_.getOrInsertFunction("malloc", llvm::PointerType::getUnqual(context_), size_type);
  llvm::Value *storage =
      builder_->CreateCall(malloc_fn, {llvm::ConstantInt::get(size_type, bytes)}, op->name);
  heap_buffers_.insert(storage);
  return storage;
}

void CodeGenLLVM::release_buffer(const Allocate *op, llvm::Value *storage) {
  if (!heap_buffers_.erase(storage))
    return;
  llvm::FunctionCallee free_fn = module_.getOrInsertFunction(
      "free", llvm::Type::getVoidTy(context_), llvm::PointerType::getUnqual(context_));
  builder_->CreateCall(free_fn, {storage});
}

llvm::Value *CodeGenLLVM::entry_alloca(llvm::Type *element, int64_t elements,
                                       const std::string &name) {
  // In the entry block, so that an allocation inside a loop is made once and
  // SROA/mem2reg can promote it to registers.
  llvm::BasicBlock &entry = function_->getEntryBlock();
  llvm::IRBuilder<> entry_builder(&entry, entry.begin());
  llvm::AllocaInst *storage =
      entry_builder.CreateAlloca(llvm::ArrayType::get(element, elements), nullptr, name);
  storage->setAlignment(llvm::Align(16));
  return storage;
}

void CodeGenLLVM::emit_for(const For *op) {
  if (op->for_kind == ForKind::Unrolled)
    internal_error("unrolled loop '", op->name, "' reached codegen: lowering expands them");
  llvm::Value *min = codegen(op->min);
  llvm::Value *extent = codegen(op->extent);
  llvm::Value *end = builder_->CreateAdd(min, extent, op->name + ".end", false, true);

  // A rotated loop: test once before entering, then at the bottom.
  llvm::BasicBlock *preheader = builder_->GetInsertBlock();
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(context_, op->name + ".loop", function_);
  // Blocks join the function when their code is emitted, so the printed IR
  // reads in program order.
  llvm::BasicBlock *after = llvm::BasicBlock::Create(context_, op->name + ".after");
  builder_->CreateCondBr(builder_->CreateICmpSLT(min, end), loop, after);

  builder_->SetInsertPoint(loop);
  llvm::PHINode *index = builder_->CreatePHI(min->getType(), 2, op->name);
  index->addIncoming(min, preheader);
  RegisterArrays::State on_entry = registers_.state();
  RegisterArrays::LoopPhis register_phis = registers_.open_loop(*builder_, preheader, op->body);
  variables_.push(op->name, index);
  codegen(op->body);
  variables_.pop(op->name);
  llvm::Value *next = builder_->CreateAdd(index, llvm::ConstantInt::get(min->getType(), 1),
                                          op->name + ".next", false, true);
  llvm::BranchInst *back_edge =
      builder_->CreateCondBr(builder_->CreateICmpSLT(next, end), loop, after);
  llvm::BasicBlock *latch = builder_->GetInsertBlock();
  index->addIncoming(next, latch);
  registers_.close_loop(register_phis, latch);

  if (op->role == LoopRole::MmaSteps || op->role == LoopRole::EpilogueSteps) {
    // A warp MMA's elements and k steps as the host runs them
    // (emit_warp_mma): left loops, since unrolling the hundreds of them a
    // tensor-core nest holds made host compile times grow past a minute.
    // The epilogue's steps over staged sums: a loop so that its code
    // appears once (TileStores::SumsThroughShared).
    llvm::Metadata *disable[] = {llvm::MDString::get(context_, "llvm.loop.unroll.disable")};
    llvm::MDNode *self = llvm::MDNode::getDistinct(context_, {nullptr, llvm::MDNode::get(context_, disable)});
    self->replaceOperandWith(0, self);
    back_edge->setMetadata(llvm::LLVMContext::MD_loop, self);
  }
  // A vectorized loop: the schedule asked for vectors, so tell the loop
  // vectorizer. A GPU thread loop (which reaches this emitter on the host
  // only; on the GPU it is a thread index): not vectorized. Its body is one
  // thread's whole unrolled work, and widened across threads it compiled
  // slower and, with AVX-512, wrong: LLVM 22's loop vectorizer miscompiled
  // the interleaved accesses of the staged GEMM's thread loops in 8 x 4
  // warps (gpu_thread_warps), whose every iteration updates each
  // accumulator eight times. The same IR, through opt and llc, is right for
  // -mcpu=haswell, for the native CPU with -mattr=-avx512f or
  // -enable-interleaved-mem-accesses=false, and wrong for the native
  // AVX-512 CPU. Only the host's speed depends on it.
  if (op->for_kind == ForKind::Vectorized || op->for_kind == ForKind::GpuThread) {
    llvm::Metadata *hint[] = {
        llvm::MDString::get(context_, "llvm.loop.vectorize.enable"),
        llvm::ConstantAsMetadata::get(llvm::ConstantInt::getBool(context_, op->for_kind == ForKind::Vectorized))};
    llvm::MDNode *self = llvm::MDNode::getDistinct(context_, {nullptr, llvm::MDNode::get(context_, hint)});
    self->replaceOperandWith(0, self);
    back_edge->setMetadata(llvm::LLVMContext::MD_loop, self);
  }
  after->insertInto(function_);
  builder_->SetInsertPoint(after);
  // Reached from the preheader when the loop does not run, else from the
  // last iteration.
  RegisterArrays::State on_exit = registers_.state();
  registers_.join(*builder_, on_entry, preheader, on_exit, latch);
}

// ------------------------------------------------------------- statements

void CodeGenLLVM::visit(const For *op) { emit_for(op); }

void CodeGenLLVM::visit(const Store *op) {
  const auto *async = op->value.as<Call>();
  // Call::make_intrinsic has checked the argument counts.
  if (async && async->intrinsic == Intrinsic::AsyncLoadVector) {
    const auto *load = async->args[0].as<Load>();
    auto vector = load ? as_const_int(async->args[2]) : std::nullopt;
    COALESCE_INTERNAL_ASSERT(load && vector, "malformed async_load_vector");
    llvm::Value *count = codegen(async->args[1]);
    emit_async_vector_copy(buffer_element(op->buffer, op->indices, load->type),
                           buffer_element(load->buffer, load->indices, load->type), load->type, count,
                           static_cast<int>(*vector));
    return;
  }
  if (async && async->intrinsic == Intrinsic::LoadVector) {
    const auto *load = async->args[0].as<Load>();
    auto lanes = load ? as_const_int(async->args[1]) : std::nullopt;
    COALESCE_INTERNAL_ASSERT(load && lanes && *lanes > 0, "malformed load_vector");
    emit_vector_copy(buffer_element(op->buffer, op->indices, load->type),
                     buffer_element(load->buffer, load->indices, load->type), load->type, static_cast<int>(*lanes));
    return;
  }
  if (async && async->intrinsic == Intrinsic::AsyncLoad) {
    const auto *load = async->args[0].as<Load>();
    COALESCE_INTERNAL_ASSERT(load, "async_load of something other than a load");
    llvm::Value *in_bounds = async->args.size() == 2 ? codegen(async->args[1]) : nullptr;
    emit_async_copy(buffer_element(op->buffer, op->indices, load->type),
                    buffer_element(load->buffer, load->indices, load->type), load->type, in_bounds);
    return;
  }
  if (async && async->intrinsic == Intrinsic::AtomicAdd) {
    llvm::Value *value = codegen(async->args[0]);
    emit_atomic_add(buffer_element(op->buffer, op->indices, async->type), value);
    return;
  }
  llvm::Value *value = codegen(op->value);
  if (registers_.holds(op->buffer)) {
    registers_.store(op->buffer, op->indices[0], value);
    return;
  }
  value = stored_value(op->buffer, value);
  llvm::Value *address = buffer_element(op->buffer, op->indices, op->value.type());
  builder_->CreateAlignedStore(value, address,
                               module_.getDataLayout().getABITypeAlign(value->getType()));
}

void CodeGenLLVM::visit(const Allocate *op) {
  int64_t elements = 1;
  bool constant_size = true;
  for (const Expr &extent : op->extents) {
    std::optional<int64_t> constant = as_const_int(extent);
    if (constant && *constant < 0)
      internal_error("allocation '", op->name, "' has a negative extent at codegen");
    constant_size &= constant.has_value();
    elements *= constant.value_or(1);
  }
  if (RegisterArrays::promotable(op)) {
    registers_.add(op->name, llvm_type_of(op->type), std::max<int64_t>(elements, 1));
    codegen(op->body);
    registers_.remove(op->name);
    return;
  }
  llvm::Value *storage = nullptr;
  if (constant_size) {
    storage = allocate_buffer(op, std::max<int64_t>(elements, 1));
  } else {
    // A root Func's full buffer (M x N): sized by the parameters at run time.
    if (op->memory != MemoryType::Heap)
      internal_error("allocation '", op->name, "' has a non-constant extent at codegen, outside the heap");
    llvm::Type *size_type = llvm::Type::getInt64Ty(context_);
    llvm::Value *bytes = llvm::ConstantInt::get(size_type, std::max(1, op->type.bytes()));
    for (const Expr &extent : op->extents)
      bytes = builder_->CreateMul(bytes, builder_->CreateSExt(codegen(extent), size_type));
    llvm::FunctionCallee malloc_fn =
        module_.getOrInsertFunction("malloc", llvm::PointerType::getUnqual(context_), size_type);
    storage = builder_->CreateCall(malloc_fn, {bytes}, op->name);
    heap_buffers_.insert(storage);
  }
  buffers_.push(op->name, storage);
  codegen(op->body);
  buffers_.pop(op->name);
  release_buffer(op, storage);
}

void CodeGenLLVM::visit(const Block *op) {
  for (const Stmt &s : op->stmts)
    codegen(s);
}

void CodeGenLLVM::visit(const IfThenElse *op) {
  llvm::Value *condition = codegen(op->condition);
  llvm::BasicBlock *then_block = llvm::BasicBlock::Create(context_, "then", function_);
  llvm::BasicBlock *after = llvm::BasicBlock::Create(context_, "endif");
  llvm::BasicBlock *else_block =
      op->else_case.defined() ? llvm::BasicBlock::Create(context_, "else") : after;
  llvm::BasicBlock *else_end = builder_->GetInsertBlock(); // without an else: the branch itself
  RegisterArrays::State before = registers_.state();
  builder_->CreateCondBr(condition, then_block, else_block);

  builder_->SetInsertPoint(then_block);
  codegen(op->then_case);
  builder_->CreateBr(after);
  llvm::BasicBlock *then_end = builder_->GetInsertBlock();
  RegisterArrays::State after_then = registers_.state();
  registers_.set_state(std::move(before));
  if (op->else_case.defined()) {
    else_block->insertInto(function_);
    builder_->SetInsertPoint(else_block);
    codegen(op->else_case);
    builder_->CreateBr(after);
    else_end = builder_->GetInsertBlock();
  }
  after->insertInto(function_);
  builder_->SetInsertPoint(after);
  RegisterArrays::State after_else = registers_.state();
  registers_.join(*builder_, after_then, then_end, after_else, else_end);
}

void CodeGenLLVM::visit(const LetStmt *op) {
  variables_.push(op->name, codegen(op->value));
  codegen(op->body);
  variables_.pop(op->name);
}

void CodeGenLLVM::visit(const Barrier *op) { emit_barrier(op->threads); }

void CodeGenLLVM::visit(const Evaluate *op) { codegen(op->value); }

void CodeGenLLVM::visit(const WarpMma *op) { emit_warp_mma(op); }

void CodeGenLLVM::visit(const TensorCopy *op) { emit_tensor_copy(op); }

void CodeGenLLVM::visit(const TmaStaging *) {
  internal_error("a TMA staging mark reached code generation: lower_tma_pipelines replaces every one");
}

void CodeGenLLVM::visit(const PipelinedStaging *) {
  internal_error("a pipelined staging mark reached code generation: pipeline_staged_copies replaces every one");
}

void CodeGenLLVM::visit(const ProducerBoundary *) {
  internal_error("a producer boundary reached code generation: reallocate_registers replaces every one");
}

} // namespace coalesce
