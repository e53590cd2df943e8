#pragma once
// What lowering hands to codegen: a function's arguments and its loop nest,
// and for the GPU the kernels it launches. Codegen reads only this, never the
// schedule.

#include "dsl/IR.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coalesce {

/// One definition that reads an input: it runs (and reads) only when every
/// reduction extent it iterates over is positive, and the output is not
/// empty. A pure definition has no reduction extents: it always reads.
struct InputRead {
  std::string site; ///< "acc's update 0", for messages
  std::vector<Expr> reduction_extents;
};

/// One argument of a lowered function, in call order: the input buffers,
/// then the output buffer, then the scalar parameters.
struct Argument {
  enum class Kind { Buffer, Scalar };
  std::string name;
  Kind kind = Kind::Buffer;
  Type type;                  ///< element type of a buffer; the type of a scalar
  std::vector<Expr> extents;  ///< a buffer's extents, outermost first (row-major)
  bool is_output = false;
  /// An input's readers: where it may be empty (K = 0) is decided from them
  /// when the pipeline is called (runtime/Arguments.cpp, the AOT launcher).
  std::vector<InputRead> reads;
  /// Scratch memory, not the caller's data: of a reduction split across
  /// blocks (split_k), or an input's row-padded copy that the TMA reads
  /// (TmaCopies::padded_copy). The runtime allocates it zeroed and
  /// keeps it; every launch leaves split_k's zeroed again (counters reset,
  /// atomic tiles cleared) and rewrites a padded copy whole before reading
  /// it, so it is reused without clearing. Never bound by name.
  bool is_workspace = false;
  /// A view's element strides, outermost first (an input's InputContents::strides,
  /// the output's FuncContents::output_strides);
  /// empty: dense.
  std::vector<Expr> strides = {};
  bool is_buffer() const { return kind == Kind::Buffer; }
};

/// A loop nest ready for codegen: loads and stores use one flat i32 index;
/// every allocation has constant extents; only serial, vectorized, gpu_block
/// and gpu_thread loops remain (unrolled loops are expanded). Its intrinsic
/// calls are those of dsl/Intrinsics.h: async_load and async_load_vector
/// only as the value of a store (a copy that may complete later), and
/// thread_id.{x,y,z}, block_id.{x,y,z} only in GPU kernels.
struct LoweredFunc {
  std::string name;
  std::vector<Argument> args;
  Stmt body;
};

/// A TMA tensor map a kernel takes by value after its arguments, one per
/// (input, box) its TensorCopy statements use, in first-use order: built on
/// the host from the input's pointer and extents (row-major, dense), with
/// the 128-byte swizzle and zero fill outside the input. Where the input
/// cannot be described (tma_describable), the kernel never reads it (it
/// takes the cp.async copies) and the map may be left zeroed.
struct TensorMapParam {
  std::string input;
  std::vector<int> box; ///< the box's extents, input order (outermost first)
};

/// How a kernel of a program starts relative to the kernel before it.
enum class KernelStart {
  /// Once the previous kernel has finished (stream order).
  AfterPrevious,
  /// Where the target has grid dependencies (sm_90:
  /// GpuTarget::has_grid_dependencies), launched with programmatic stream
  /// serialization: its blocks may start while the previous kernel's run
  /// (which lets them from its first instruction on,
  /// griddepcontrol.launch_dependents), and its threads wait for that
  /// kernel to finish and for its memory (griddepcontrol.wait) before
  /// anything else, so what it reads is what the previous kernel wrote.
  /// Elsewhere as AfterPrevious. What it saves is the launch between the
  /// two: split_k's combine kernel (a few microseconds, against kernels of
  /// tens).
  DuringPreviousTail,
};

/// One GPU kernel: its body runs once per thread, thread and block loops
/// already replaced by thread_id/block_id intrinsics. Shared allocations in
/// the body become static shared memory; register allocations per-thread
/// arrays indexed only by constants.
struct GpuKernel {
  std::string name;
  Stmt body;
  std::array<Expr, 3> grid;     ///< blocks per dimension, in terms of the scalar arguments
  std::array<std::string, 3> block_loops; ///< the block loop of each dimension (qualified), or empty
  std::array<int, 3> block{{1, 1, 1}}; ///< threads per dimension
  int threads() const { return block[0] * block[1] * block[2]; }
  int shared_bytes = 0;
  /// Whether the tiles are one dynamic array (their sum, each aligned, is
  /// over kStaticSharedLimit): then each starts at its offset below, and
  /// tiles that never live side by side share bytes (SharedTileLayout.h),
  /// so that shared_bytes is their layout's end; else each is a static
  /// array of its own.
  bool dynamic_shared = false;
  std::map<std::string, int64_t> shared_offsets;
  /// Where each shared tile starts, in bytes: 16 (vector copies), or 1024
  /// in a kernel with warpgroup MMAs, whose swizzled tiles must start at an
  /// atom of the 128-byte swizzle (the matrix descriptors' base offset 0).
  int shared_alignment = 16;
  int min_blocks_per_sm = 0; ///< 0: no request
  /// Blocks per cluster in each dimension (gpu_cluster; all 1: none). The
  /// grid is a whole number of clusters in each.
  std::array<int, 3> cluster{{1, 1, 1}};
  int cluster_blocks() const { return cluster[0] * cluster[1] * cluster[2]; }
  std::vector<TensorMapParam> tensor_maps;
  /// Buffer arguments the kernel accesses in vectors (load_vector: the
  /// output's tiles stored through shared memory), with the alignment in
  /// bytes their pointers need; the launch checks them.
  std::vector<std::pair<std::string, int>> aligned_buffers;
  KernelStart start = KernelStart::AfterPrevious;
};

/// The index in `kernel.tensor_maps` of the map a TensorCopy of `input`
/// with `box` reads, or -1.
inline int tensor_map_index(const GpuKernel &kernel, const std::string &input, const std::vector<int> &box) {
  for (size_t m = 0; m < kernel.tensor_maps.size(); ++m)
    if (kernel.tensor_maps[m].input == input && kernel.tensor_maps[m].box == box)
      return static_cast<int>(m);
  return -1;
}

/// Shared memory a kernel can have statically (declared in the PTX); above
/// it, a kernel must take its shared memory dynamically, opting in at launch.
constexpr int kStaticSharedLimit = 48 * 1024;

/// The dynamic shared memory `kernel` is launched with: all of it when it
/// needs more than the static limit, else none (its tiles are static).
inline int dynamic_shared_bytes(const GpuKernel &kernel) {
  return kernel.dynamic_shared ? kernel.shared_bytes : 0;
}

/// A pipeline lowered for the GPU up to thread fusion: the serial loop nest
/// (what Pipeline::loop_nest prints, stage prefixes kept) with what else
/// decides the kernels. Everything after it (thread fusion, flattening,
/// unrolling, load hoisting) is a fixed function of it, so it, with the
/// target and the compiler's version, determines the PTX: the compile
/// cache's key is built from it (codegen/PtxCache.h).
struct Environment;

struct GpuNest {
  std::string name;
  std::vector<Argument> args;
  Stmt serial;
  int min_blocks_per_sm = 0; ///< the output's gpu_min_blocks_per_sm
  /// The output's gpu_cluster: its block loop (qualified) and blocks per
  /// cluster (0: none).
  std::string cluster_loop;
  int cluster_blocks = 0;
  /// What lower_gpu_nest_unverified lowered `serial` from, kept for the
  /// verifiers it left out (scheduler/Lower.h); empty once they have run.
  std::shared_ptr<const Environment> unverified;
  /// GpuProgram::unverified_on_gpu.
  std::vector<std::string> unverified_on_gpu;
};

/// A pipeline lowered for the GPU: kernels launched in order, each taking
/// every argument of `args`.
struct GpuProgram {
  std::string name;
  std::vector<Argument> args;
  std::vector<GpuKernel> kernels;
  /// What the program does that no GPU has run yet, in words: the runtime
  /// and coalesce-aot refuse it until coalesce-gpu-check has passed it on a
  /// GPU (runtime/UnverifiedOnGpu.h). Empty: nothing.
  std::vector<std::string> unverified_on_gpu;
};

} // namespace coalesce
