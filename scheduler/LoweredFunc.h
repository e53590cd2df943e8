#pragma once
// What lowering hands to codegen: a function's arguments and its loop nest,
// and for the GPU the kernels it launches. Codegen reads only this, never the
// schedule.

#include "dsl/IR.h"

#include <array>
#include <string>
#include <vector>

namespace coalesce {

/// One argument of a lowered function, in call order: the input buffers,
/// then the output buffer, then the scalar parameters.
struct Argument {
  enum class Kind { Buffer, Scalar };
  std::string name;
  Kind kind = Kind::Buffer;
  Type type;                  ///< element type of a buffer; the type of a scalar
  std::vector<Expr> extents;  ///< a buffer's extents, outermost first (row-major)
  bool is_output = false;
  bool is_buffer() const { return kind == Kind::Buffer; }
};

/// A loop nest ready for codegen: loads and stores use one flat i32 index;
/// every allocation has constant extents; only serial, vectorized, gpu_block
/// and gpu_thread loops remain (unrolled loops are expanded). Intrinsic calls
/// it may contain: erf, exp, tanh, sqrt, abs (float); async_load(load), only
/// as the value of a store (a copy that may complete later), and
/// async_wait() (waits for this thread's copies); and on the GPU
/// thread_id.{x,y,z}, block_id.{x,y,z} (i32, no arguments).
struct LoweredFunc {
  std::string name;
  std::vector<Argument> args;
  Stmt body;
};

/// One GPU kernel: its body runs once per thread, thread and block loops
/// already replaced by thread_id/block_id intrinsics. Shared allocations in
/// the body become static shared memory; register allocations per-thread
/// arrays indexed only by constants.
struct GpuKernel {
  std::string name;
  Stmt body;
  std::array<Expr, 3> grid;     ///< blocks per dimension, in terms of the scalar arguments
  std::array<int, 3> block{{1, 1, 1}}; ///< threads per dimension
  int threads() const { return block[0] * block[1] * block[2]; }
  int shared_bytes = 0;
  int min_blocks_per_sm = 0; ///< 0: no request
};

/// A pipeline lowered for the GPU up to thread fusion: the serial loop nest
/// (what Pipeline::loop_nest prints, stage prefixes kept) with what else
/// decides the kernels. Everything after it (thread fusion, flattening,
/// unrolling, load hoisting) is a fixed function of it, so it, with the
/// target and the compiler's version, determines the PTX: the compile
/// cache's key is built from it (codegen/PtxCache.h).
struct GpuNest {
  std::string name;
  std::vector<Argument> args;
  Stmt serial;
  int min_blocks_per_sm = 0; ///< the output's gpu_min_blocks_per_sm
};

/// A pipeline lowered for the GPU: kernels launched in order, each taking
/// every argument of `args`.
struct GpuProgram {
  std::string name;
  std::vector<Argument> args;
  std::vector<GpuKernel> kernels;
};

} // namespace coalesce
