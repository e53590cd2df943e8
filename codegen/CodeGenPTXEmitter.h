#pragma once
// The GPU flavour of the LLVM emitter (CodeGenLLVM): what compile_to_ptx
// (CodeGenPTX.h) runs over a GpuProgram, one kernel per GpuKernel. Its
// MMA instructions (mma.sync, wgmma) are in CodeGenPTXMma.cpp, the rest in
// CodeGenPTX.cpp. Internal to codegen/.

#include "codegen/CodeGenLLVM.h"
#include "scheduler/LoweredFunc.h"

#include <llvm/IR/InlineAsm.h>

#include <set>

#include <string>
#include <vector>

namespace coalesce {

/// The GPU flavour of the emitter: one kernel per GpuKernel.
class CodeGenPTX : public CodeGenLLVM {
public:
  using CodeGenLLVM::CodeGenLLVM;

  /// `grid_dependencies`: the target's (GpuTarget::has_grid_dependencies).
  void emit(const GpuProgram &program, bool grid_dependencies);

protected:
  void emit_prologue() override;
  // A warpgroup MMA ties its accumulators' registers. Where a k step's
  // MMAs update several accumulator tiles (two sums, two 64-row halves of
  // a warpgroup's 128 rows), each register's first value comes out of an
  // instruction of its own, so that no copy of a shared value (one zero
  // for all) lands between the step's fence and its later MMAs (ptxas
  // serializes them there: C7519 / C7517). With one tile per step the
  // zeros stay plain constants: the opaque copies would keep 128 more
  // values live and spill the persistent 128 x 256 kernel with producer
  // warps.
  llvm::Value *stored_value(const std::string &buffer, llvm::Value *value) override;

  // The 8-bit floats are their bits (i8) on the GPU as on the host; PTX
  // converts them in pairs (sm_89 and later), a value in the pair's low
  // half: e4m3 / e5m2 -> f16 exactly, then f16 -> f32 exactly.
  llvm::Value *emit_widen(Type from, llvm::Value *value) override;
  // f32 -> e4m3 / e5m2, to nearest even, saturating, NaN to 0x7F (as
  // dsl/NarrowFloat.h's float_to_e4m3_bits): the second source is the
  // pair's low byte.
  llvm::Value *emit_narrow(Type to, llvm::Value *value) override;
  static const char *fp8_ptx_name(Type type) { return type.code == Type::Code::E4M3 ? "e4m3" : "e5m2"; }
  // A PTX instruction without side effects, computing one value.
  llvm::Value *pure_ptx(const std::string &text, const std::string &constraints, llvm::Type *result,
                        const std::vector<llvm::Value *> &args);

  llvm::FunctionCallee math_function(Intrinsic math, Type type) override;

  llvm::Value *emit_target_intrinsic(const Call *op) override;

  // cp.async (sm_80+): global to shared without passing through registers,
  // so the copy of the next tile overlaps the arithmetic on this one. It
  // copies 4, 8 or 16 bytes; a 2-byte (bf16/f16) element is copied with a
  // plain load and store instead, which the staging barriers order the same.
  void emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *in_bounds) override;

  // cp.async.cg with a source size: 16 bytes land in shared memory, those
  // past the first count * element bytes as zeros.
  void emit_async_vector_copy(llvm::Value *destination, llvm::Value *source, Type type, llvm::Value *count,
                              int vector) override;

  // One ld / st of the whole vector (v4.b32 for 16 bytes): the lowering
  // keeps both addresses aligned to it (scheduler/StageOutputTiles.h).
  llvm::Align vector_copy_alignment(Type type, int lanes) override;

  // The 32 lanes' parts of a WarpMma are one mma.sync: each lane gathers its
  // fragments of A and B (the elements the instruction's layout assigns to
  // it, not the ones it accumulates), passes its 4 accumulators and gets
  // them back. Row-major A (m x k), column-major B (k x n), as .row.col says.
  void emit_warp_mma(const WarpMma *op) override;

  // The 128 threads' parts of a warpgroup MMA are one wgmma.mma_async:
  // every thread passes the same two shared-memory matrix descriptors (the
  // operand tiles' start, byte offsets and swizzle) and its n / 2
  // accumulators, in the instruction's register order (4 per 8-column
  // fragment: rows g and g + 8, columns 2t and 2t + 1). LLVM has no
  // intrinsic for it, so it is inline PTX whose outputs are tied to the
  // accumulator inputs: nothing but the instruction defines them between
  // the fence and the wait (ptxas serializes the MMAs otherwise, C7515).
  void emit_warpgroup_mma(const WarpMma *op);

  void emit_async_proxy_sync(Intrinsic which, int pending) override;

  void emit_thread_control(Intrinsic which, int count) override;
  void emit_group_barrier(Intrinsic which, llvm::Value *id, int threads) override;

  // The mbarriers and the TMA have intrinsics in LLVM 22, but inline PTX
  // keeps their operands plain 32-bit shared addresses, which is what the
  // instructions take. Each clobbers memory, so no shared access moves
  // across it.
  void emit_mbarrier(Intrinsic which, llvm::Value *barrier, llvm::Value *operand) override;

  // One TMA box into shared memory, its bytes counted on the barrier. The
  // coordinates go innermost first, as the tensor map's dimensions do.
  //
  // Multicast (op->multicast blocks): this block, rank r of its cluster,
  // copies rows [r R / m, (r + 1) R / m) of the box to the same place in
  // the shared memory of every block of the cluster (the mask), each of
  // whose barriers at this one's address counts the bytes. The part starts
  // R / m rows of 128 bytes further, a whole number of swizzle atoms, so it
  // lands swizzled as the whole box would.
  void emit_tensor_copy(const TensorCopy *op) override;

  void emit_async_commit() override;
  void emit_async_wait_group(int pending) override;
  void emit_async_wait() override;

  void emit_barrier(int threads) override;

  // The pattern of cooperative groups' grid sync: the block's stores, a
  // barrier, then one thread publishes them (fence at GPU scope) and counts
  // the arrival; the last block's thread fences again before the barrier
  // that releases its threads to read the other blocks' stores.
  llvm::Value *emit_last_arrival(llvm::Value *counter, llvm::Value *arrivals) override;

  void emit_atomic_add(llvm::Value *address, llvm::Value *value) override;

  llvm::Value *allocate_buffer(const Allocate *op, int64_t elements) override;

  void emit_for(const For *op) override;

private:
  // A pointer into shared memory as the 32-bit address PTX's shared-space
  // instructions take.
  llvm::Value *shared_address(llvm::Value *pointer);

  // A PTX instruction with side effects that clobbers memory.
  void inline_ptx(const std::string &text, const std::string &constraints, const std::vector<llvm::Value *> &args);

  // The shared-memory address of an MMA operand's element (mma.m, mma.n,
  // mma.k): what ldmatrix and the warpgroup MMA's descriptors take.
  llvm::Value *shared_operand_address(const Expr &operand, llvm::Value *m, llvm::Value *n, llvm::Value *k);

  // Whether the operand reads a shared-memory buffer (what ldmatrix reads).
  bool in_shared(const Expr &operand);
  // The factors of a WarpMma's product that read A and B: A's depends on
  // the row (mma.m), and tensorize_mma puts it first.
  static const Expr &a_of(const Mul *mul) { return mul->a; }
  static const Expr &b_of(const Mul *mul) { return mul->b; }
  // The operand as it is stored: a 16-bit value without its widening to
  // f32, an f32 without its rounding to tf32 (the instruction does both).
  static Expr unwrap(const Expr &operand);

  // The runtime looks kernels up by name, so the name must survive into the
  // PTX unchanged: a valid PTX identifier that the backend will not rename.
  static void check_kernel_name(const std::string &name);

  const GpuKernel *kernel_ = nullptr;
  unsigned tensor_map_base_ = 0;                   ///< the parameter of the kernel's first tensor map
  bool pending_wgmma_fence_ = false;               ///< a wgmma_fence waits for the next MMA's instruction block
  std::set<std::string> warpgroup_accumulators_;   ///< the buffers the kernel's warpgroup MMAs accumulate into
  llvm::GlobalVariable *arrival_flag_ = nullptr;   ///< last_arrival's answer, shared by a block's threads
  llvm::GlobalVariable *dynamic_shared_ = nullptr; ///< the kernel's extern shared array, if it has one
  bool waits_for_previous_ = false, lets_next_start_ = false; ///< the kernel's grid dependencies
};

} // namespace coalesce
