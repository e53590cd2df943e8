#pragma once
// The generic emitter from a lowered loop nest to LLVM IR, shared by the host
// and the GPU back ends. It handles everything whose meaning does not depend
// on the target (arithmetic, loads and stores, loops, branches, lets,
// allocations); the few target-specific decisions (which function computes
// erf, what a barrier or a GPU index is, where shared memory lives) are
// virtual hooks that CodeGenHost and CodeGenPTX override. Halide's
// CodeGen_LLVM / CodeGen_PTX_Dev split is the model.
//
// Input invariants (LoweredFunc.h): every Load/Store has one i32 index, every
// Allocate has constant extents, no unrolled loops remain.
//
// Internal to codegen/: the public entry points are in CodeGenHost.h and
// CodeGenPTX.h, which keep LLVM types out of their interfaces.

#include "codegen/RegisterArrays.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoweredFunc.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace coalesce {

class CodeGenLLVM : protected IRVisitor {
public:
  explicit CodeGenLLVM(llvm::Module &module);
  ~CodeGenLLVM() override;

  /// Creates `void name(args...)` in the module, buffers as noalias pointers
  /// (readonly when `body` never stores to them), scalars by value, and emits
  /// `body` into it. Subclasses add calling conventions and attributes.
  /// `trailing` parameters of the given types follow the arguments (a GPU
  /// kernel's tensor maps), for the body's code to find by position.
  llvm::Function *emit_function(const std::string &name, const std::vector<Argument> &args,
                                const Stmt &body, llvm::GlobalValue::LinkageTypes linkage,
                                const std::vector<llvm::Type *> &trailing = {});

  /// The LLVM type of a Coalesce scalar type (a bf16/f16 is `bfloat`/`half`,
  /// or i16 bits where the target says narrow_floats_as_bits(); an 8-bit
  /// float is always its i8 bits).
  llvm::Type *llvm_type_of(Type type) const;

protected:
  // ------------------------------------------------------ target-specific hooks

  /// Code at the entry of each function emit_function makes, before its
  /// body: nothing by default.
  virtual void emit_prologue() {}

  /// The function that computes the float math intrinsic `math` (erf, exp,
  /// tanh, sqrt, abs: is_math_intrinsic) on one value of `type`.
  virtual llvm::FunctionCallee math_function(Intrinsic math, Type type) = 0;

  /// True if bf16/f16 values are i16 bits in this target's code, converted
  /// by emit_widen/emit_narrow (the host), rather than `bfloat`/`half`.
  virtual bool narrow_floats_as_bits() const { return false; }
  /// A bf16/f16/e4m3/e5m2 value (`from`) as an exact f32. The base: fpext
  /// (the targets convert the 8-bit floats' bits themselves).
  virtual llvm::Value *emit_widen(Type from, llvm::Value *value);
  /// An f32 value rounded to the nearest bf16/f16/e4m3/e5m2 (`to`), ties to
  /// even (saturating for the 8-bit floats). The base: fptrunc (the NVPTX
  /// backend's cvt.rn.bf16.f32 / cvt.rn.f16.f32).
  virtual llvm::Value *emit_narrow(Type to, llvm::Value *value);

  /// A GPU index intrinsic (thread_id, block_id). The base has none: on the
  /// host, reaching it is a compiler bug.
  virtual llvm::Value *emit_target_intrinsic(const Call *op);

  /// Makes every thread of a block wait. A no-op on the host.
  /// `threads` > 0: only the block's first `threads` threads meet (Barrier).
  virtual void emit_barrier(int threads = 0);
  /// The value a plain store into `buffer` writes (a target may make it
  /// opaque: the PTX back end does for warpgroup MMA accumulators).
  virtual llvm::Value *stored_value(const std::string &buffer, llvm::Value *value) { return value; }

  /// Copies one element from `source` to `destination` without waiting for
  /// it (a Store of async_load(...)); the base copies at once.
  /// With `in_bounds` (else null), an element outside the input is written
  /// as 0 and `source` is not read.
  virtual void emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *in_bounds);
  /// Copies `vector` consecutive elements (16 bytes) from `source` to
  /// `destination` without waiting: the first `count` from the source, the
  /// rest zero (a Store of async_load_vector(...)). The base copies at once.
  virtual void emit_async_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *count,
                                      int vector);
  /// Copies `lanes` consecutive elements of `type` from `source` to
  /// `destination` as one vector load and store (a Store of
  /// load_vector(...)), at vector_copy_alignment.
  void emit_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, int lanes);
  /// What a vector copy's addresses are aligned to: one element in the
  /// base (the host's vector accesses take any address); the GPU's take
  /// the whole vector's bytes, which is what makes them one access.
  virtual llvm::Align vector_copy_alignment(Type type, int lanes);
  /// Closes this thread's current group of async copies (async_commit()).
  virtual void emit_async_commit();
  /// Waits until at most `pending` of this thread's newest groups are still
  /// in flight (async_wait_group(pending)).
  virtual void emit_async_wait_group(int pending);
  /// Waits for this thread's async copies (async_wait()); the base has none.
  virtual void emit_async_wait();
  /// Synchronization of the GPU's asynchronous proxy and warpgroup MMAs
  /// (fence_proxy_async, wgmma_fence, wgmma_commit, wgmma_wait(pending)): a
  /// call of one of those intrinsics. The host runs every MMA at once, so
  /// the base emits nothing.
  virtual void emit_async_proxy_sync(Intrinsic which, int pending);
  /// An mbarrier intrinsic (mbarrier_init, _init_fence, _expect_tx, _wait,
  /// _inval) on the barrier at `barrier` (null for the fence) with its
  /// second argument `operand` (or null). The host runs each TMA copy at
  /// once (emit_tensor_copy), so the base emits nothing.
  virtual void emit_mbarrier(Intrinsic which, llvm::Value *barrier, llvm::Value *operand);
  /// registers_decrease / registers_increase (to `count` registers per
  /// thread) and thread_exit: nothing on the host (Intrinsics.h says why).
  virtual void emit_thread_control(Intrinsic which, int count);
  /// group_barrier_sync / _arrive: nothing on the host (one thread runs the
  /// groups in turn).
  virtual void emit_group_barrier(Intrinsic which, llvm::Value *id, int threads) {}
  /// A TensorCopy. The base runs its element-wise copy, as the host does.
  virtual void emit_tensor_copy(const TensorCopy *op);

  /// last_arrival: counts one arrival of this block at the i32 counter at
  /// `counter`; true (i1) for the block whose arrival makes `arrivals`,
  /// which also resets the counter to 0. The base is serial: a plain
  /// read-modify-write, as the host runs one block at a time.
  virtual llvm::Value *emit_last_arrival(llvm::Value *counter, llvm::Value *arrivals);
  /// A Store of atomic_add(value): adds `value` to the element at `address`
  /// atomically. The base is a plain read-modify-write (serial).
  virtual void emit_atomic_add(llvm::Value *address, llvm::Value *value);

  /// One lane's part of a warp MMA (see WarpMma). The base runs it as its
  /// definition says, element by element, as the host does.
  virtual void emit_warp_mma(const WarpMma *op);

  /// f32 rounded to tf32 (10 mantissa bits, to nearest, ties away from 0,
  /// as cvt.rna.tf32.f32; infinities and NaNs kept), as an f32.
  llvm::Value *round_to_tf32(llvm::Value *x);
  /// f32 truncated to tf32 as the tf32 instructions read f32 bits: the top
  /// 19, NaN payloads included, as an f32.
  llvm::Value *truncate_to_tf32(llvm::Value *x);

  /// Storage for `elements` values of `op->type`. The base ignores the memory
  /// type: one entry-block alloca, or malloc'd memory (freed by
  /// release_buffer) when it is too large for a thread's stack.
  virtual llvm::Value *allocate_buffer(const Allocate *op, int64_t elements);
  virtual void release_buffer(const Allocate *op, llvm::Value *storage);

  /// Emits a loop of kind `op->for_kind`. The base runs every kind except
  /// Unrolled (which lowering expands) as an ordinary serial loop.
  virtual void emit_for(const For *op);

  // --------------------------------------------------------------- helpers

  llvm::Value *codegen(const Expr &e);
  void codegen(const Stmt &s);

  /// An array of `elements` values in the current function's entry block.
  llvm::Value *entry_alloca(llvm::Type *element, int64_t elements, const std::string &name);

  /// Scoped bindings of names to values: a later binding of a name hides
  /// the earlier one until it is popped.
  class Scope {
  public:
    void push(const std::string &name, llvm::Value *value) { bindings_[name].push_back(value); }
    void pop(const std::string &name);
    llvm::Value *find(const std::string &name) const;

  private:
    llvm::StringMap<llvm::SmallVector<llvm::Value *, 1>> bindings_;
  };

  llvm::Module &module_;
  llvm::LLVMContext &context_;
  std::unique_ptr<llvm::IRBuilder<>> builder_;
  llvm::Function *function_ = nullptr;
  Scope variables_; ///< loop variables, lets and scalar arguments
  Scope buffers_;   ///< buffer name -> pointer to its first element

  /// The value of the last expression visited (visit() returns void).
  llvm::Value *value_ = nullptr;
  /// Storage from allocate_buffer that release_buffer must free.
  llvm::SmallPtrSet<llvm::Value *, 4> heap_buffers_;
  /// Register arrays held as SSA values instead of memory (RegisterArrays.h).
  RegisterArrays registers_;

  /// Integer arithmetic and element addresses are emitted once per block
  /// and operands: the unrolled body recomputes the same index terms for
  /// every element (ko % 2*512 + ti*4, ...), and LLVM would otherwise spend
  /// its first passes finding the copies. An operation's kind (a tag of
  /// reuse_or_emit's callers), its operands and its element type (GEPs).
  using ValueKey = std::tuple<llvm::BasicBlock *, int, llvm::Value *, llvm::Value *, llvm::Type *>;
  llvm::DenseMap<ValueKey, llvm::Value *> emitted_values_;
  /// The value of `tag(a, b)` computed earlier in the current block, or
  /// `emit()`'s, remembered.
  llvm::Value *reuse_or_emit(int tag, llvm::Value *a, llvm::Value *b, llvm::Type *type,
                             llvm::function_ref<llvm::Value *()> emit);

  // IRVisitor: one visit per node kind, every one overridden.
#define COALESCE_CODEGEN_VISIT(name) void visit(const name *op) override;
  COALESCE_FOR_EACH_EXPR(COALESCE_CODEGEN_VISIT) COALESCE_FOR_EACH_STMT(COALESCE_CODEGEN_VISIT)
#undef COALESCE_CODEGEN_VISIT

  llvm::Value *buffer_element(const std::string &buffer, const std::vector<Expr> &indices,
                              Type element_type);

private:
  llvm::Value *emit_cast(Type from, Type to, llvm::Value *value);
  void bind_arguments(llvm::Function *function, const std::vector<Argument> &args);
};

} // namespace coalesce
