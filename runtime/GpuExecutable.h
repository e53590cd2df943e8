#pragma once
// A GPU program loaded on the device: its PTX module and kernels, launched
// in order over device buffers with the grid sizes evaluated from the call's
// parameters. The benchmark uses it directly, on buffers it keeps.

#include "codegen/GpuTarget.h"
#include "runtime/GpuDevice.h"
#include "scheduler/LoweredFunc.h"

#include <cstdint>
#include <map>
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

  /// Launches every kernel. `buffers[i]` is the device pointer for argument
  /// i (ignored for scalars); `params` holds every scalar argument. A
  /// workspace argument (split_k's partial sums and counters) given as 0
  /// uses this executable's own, allocated zeroed on first need, grown when
  /// a call needs more, and otherwise reused: the kernels leave it zeroed.
  /// Launches that use it must not overlap (one stream, one thread at a
  /// time), as two launches sharing one workspace would mix their counts.
  void launch(const std::vector<CUdeviceptr> &buffers, const std::map<std::string, int64_t> &params) const;

  /// Bytes of workspace argument `arg` at these parameters (0 for others).
  size_t workspace_bytes(size_t arg, const std::map<std::string, int64_t> &params) const;

  const GpuProgram &program() const { return program_; }

private:
  GpuProgram program_;
  gpu::Module module_;
  bool grid_dependencies_; ///< the code's target has them (GpuTarget::has_grid_dependencies)
  std::vector<CUfunction> functions_;
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
