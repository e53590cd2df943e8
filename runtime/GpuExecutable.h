#pragma once
// A GPU program loaded on the device: its PTX module and kernels, launched
// in order over device buffers with the grid sizes evaluated from the call's
// parameters. The benchmark uses it directly, on buffers it keeps.

#include "codegen/GpuTarget.h"
#include "runtime/GpuDevice.h"
#include "scheduler/LoweredFunc.h"
#include "scheduler/SizeMultiples.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coalesce {

class GpuExecutable {
public:
  /// Loads `ptx` (compiled from `program` for `target`) into the current
  /// context. The target says whether the code waits where a kernel starts
  /// during the previous one's tail (KernelStart::DuringPreviousTail), and
  /// so whether launch may start it so.
  GpuExecutable(GpuProgram program, const std::string &ptx, const GpuTarget &target);
  /// The same, from a module already loaded (gpu::Module::load_cubin).
  GpuExecutable(GpuProgram program, gpu::Module module, const GpuTarget &target);

  /// Loads the program's module (compiled for `target`) when first needed.
  using Loader = std::function<gpu::Module()>;
  /// The program specialized for launches where each named scalar argument
  /// is a multiple of its value (scheduler/SpecializeSizes.h), loaded; null
  /// where those sizes decide nothing (the general program then runs).
  using Specializer = std::function<std::unique_ptr<GpuExecutable>(const SizeMultiples &)>;
  /// A program compiled on demand: a launch whose scalar arguments include
  /// multiples of 16, 8 or 4 runs the variant `specialize` makes for them (once per
  /// set of such arguments), any other launch the general program, which
  /// `load` compiles at the first launch that needs it. So a program run
  /// only at aligned sizes never compiles its general kernels (the
  /// branches for rows the TMA cannot read, partial reduction steps).
  GpuExecutable(GpuProgram program, Loader load, const GpuTarget &target, Specializer specialize);
  ~GpuExecutable();

  /// Launches every kernel. `buffers[i]` is the device pointer for argument
  /// i (ignored for scalars); `params` holds every scalar argument. A
  /// workspace argument (split_k's partial sums and counters) given as 0
  /// uses this executable's own, allocated zeroed on first need, grown when
  /// a call needs more, and otherwise reused: the kernels leave it zeroed.
  /// Launches that use it must not overlap (one stream, one thread at a
  /// time), as two launches sharing one workspace would mix their counts.
  void launch(const std::vector<CUdeviceptr> &buffers, const std::map<std::string, int64_t> &params) const;

  /// Compiles and loads what a launch at `params` runs (the specialized
  /// variant or the general program), so that the launch itself does not:
  /// for callers that compile on other threads than they launch from.
  void prepare(const std::map<std::string, int64_t> &params) const;

  /// Bytes of workspace argument `arg` at these parameters (0 for others).
  size_t workspace_bytes(size_t arg, const std::map<std::string, int64_t> &params) const;

  const GpuProgram &program() const { return program_; }

private:
  GpuProgram program_;
  mutable Loader load_; ///< set until the module is loaded
  mutable gpu::Module module_;
  bool grid_dependencies_; ///< the code's target has them (GpuTarget::has_grid_dependencies)
  mutable std::vector<CUfunction> functions_;
  Specializer specialize_; ///< empty: every launch runs the general program
  mutable std::map<SizeMultiples, std::unique_ptr<GpuExecutable>> variants_;
  /// Keeps `module` and finds the program's kernels in it.
  void adopt(gpu::Module module) const;
  /// Loads the module and finds its kernels, once.
  void load() const;
  /// The executable a launch at `params` runs: this one, or the variant
  /// for its sizes' multiples (made on first use).
  const GpuExecutable &for_launch(const std::map<std::string, int64_t> &params) const;
  void launch_general(const std::vector<CUdeviceptr> &buffers, const std::map<std::string, int64_t> &params) const;
  /// Per argument: the workspace this executable owns (empty for others).
  mutable std::vector<gpu::DeviceBuffer> workspace_;
  /// Per kernel, per tensor map: the last map encoded, and the pointer and
  /// extents it was encoded for (a launch on the same buffer and shape
  /// reuses it).
  struct EncodedMap {
    CUdeviceptr pointer = 0;
    std::vector<int64_t> extents, strides; // strides: a view's (empty: dense)
    CUtensorMap map;
  };
  mutable std::vector<std::vector<EncodedMap>> tensor_maps_;
  /// The maps of kernel `k` at these buffers and parameters.
  const std::vector<EncodedMap> &tensor_maps(size_t k, const std::vector<CUdeviceptr> &pointers,
                                             const std::map<std::string, int64_t> &params) const;
};

} // namespace coalesce
