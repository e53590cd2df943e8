#pragma once
// Compiles a lowered function for the CPU this process runs on, with LLVM's
// ORC JIT. The host backend runs every loop, gpu_block and gpu_thread loops
// included, in order: the schedule's serial semantics, which is how every
// schedule's numbers are checked on a machine without a GPU.

#include "scheduler/LoweredFunc.h"

#include <memory>
#include <string>

namespace coalesce {

/// A lowered function compiled to machine code in this process, as
/// `void NAME(void **args)`. It owns the JIT that holds the code, so the
/// code lives exactly as long as this object.
class HostKernel {
public:
  ~HostKernel();
  HostKernel(const HostKernel &) = delete;
  HostKernel &operator=(const HostKernel &) = delete;

  /// Runs the function. `args[i]` matches LoweredFunc::args[i]: for a buffer,
  /// its data pointer itself (row-major, element type as declared); for a
  /// scalar, a pointer to its value (an int32_t for Int(32)).
  void run(void **args) const;

  const std::string &name() const { return name_; }

private:
  friend std::unique_ptr<HostKernel> compile_for_host(const LoweredFunc &func);
  struct Jit;
  HostKernel(std::string name, std::unique_ptr<Jit> jit, void (*entry)(void **));

  std::string name_;
  std::unique_ptr<Jit> jit_;
  void (*entry_)(void **);
};

/// Generates, verifies, optimizes (optimize_for_checking) and JIT-compiles
/// `func`. Thread-safe.
std::unique_ptr<HostKernel> compile_for_host(const LoweredFunc &func);

/// The LLVM IR compile_for_host would compile, as text: after
/// optimize_for_checking when `optimize`, else as emitted.
std::string emit_host_llvm_ir(const LoweredFunc &func, bool optimize = true);

} // namespace coalesce
