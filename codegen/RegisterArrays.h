#pragma once
// Register arrays emitted as SSA values. An allocation in registers whose
// every access is a plain load or store at a constant index (what lowering
// leaves once thread fusion and unrolling are done: acc[0..63] of the GEMM)
// needs no memory: each element is the LLVM value last stored to it, and
// where control flow joins (after a branch, at a loop's head and exit) a phi
// picks the value of the path taken. This is what SROA and mem2reg would
// compute from an alloca, emitted directly, so the optimizer does not first
// work through thousands of GEPs, loads and stores to find it.
//
// Internal to codegen/ (CodeGenLLVM uses it).

#include "dsl/IR.h"

#include <llvm/IR/IRBuilder.h>

#include <map>
#include <string>
#include <vector>

namespace coalesce {

class RegisterArrays {
public:
  /// Every element's current value, per array in scope.
  using State = std::map<std::string, std::vector<llvm::Value *>>;

  /// Whether `op` can live in SSA values: in registers, and every access to
  /// it in its body a load or store of its own type at a constant index
  /// inside it (no address is taken: no async copy, atomic or MMA operand).
  static bool promotable(const Allocate *op);

  /// Brings an array of `elements` undefined values of `type` into scope.
  void add(const std::string &name, llvm::Type *type, int64_t elements);
  void remove(const std::string &name);
  bool holds(const std::string &name) const { return state_.count(name) != 0; }
  llvm::Value *load(const std::string &name, const Expr &index) const;
  void store(const std::string &name, const Expr &index, llvm::Value *value);

  const State &state() const { return state_; }
  void set_state(State state) { state_ = std::move(state); }

  /// At the start of the block `builder` is in, where control arrives with
  /// `a` from `from_a` or `b` from `from_b`: a phi for every element whose
  /// values differ; the result becomes the current state.
  void join(llvm::IRBuilder<> &builder, const State &a, llvm::BasicBlock *from_a, const State &b,
            llvm::BasicBlock *from_b);

  /// At a loop's head (the builder's block, reached from `preheader`): a phi
  /// for every element of an array in scope that `body` stores to, which
  /// becomes its current value. close_loop adds the back edge's values.
  struct LoopPhis {
    std::vector<std::pair<std::pair<std::string, size_t>, llvm::PHINode *>> phis;
  };
  LoopPhis open_loop(llvm::IRBuilder<> &builder, llvm::BasicBlock *preheader, const Stmt &body);
  void close_loop(const LoopPhis &loop, llvm::BasicBlock *latch);

private:
  State state_;
};

} // namespace coalesce
