#pragma once
// The device pointers a compiled GEMM (examples::make_gemm: inputs A, B,
// bias and the output) takes at launch, in its argument order, for every
// program that launches one (the main job, the GPU check, the benchmark),
// and the GPU check's checked launch of one.

#include "dsl/Error.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <vector>

namespace coalesce::bench {

/// A, B and bias by name, the output by its flag; 0 for a workspace (the
/// executable keeps its own) and for scalars. Another buffer argument means
/// the pipeline is not the GEMM these programs build: an internal error.
inline std::vector<CUdeviceptr> gemm_pointers(const GpuExecutable &exe, CUdeviceptr a, CUdeviceptr b,
                                              CUdeviceptr bias, CUdeviceptr out) {
  std::vector<CUdeviceptr> pointers;
  for (const Argument &arg : exe.program().args) {
    if (!arg.is_buffer() || arg.is_workspace)
      pointers.push_back(0);
    else if (arg.is_output)
      pointers.push_back(out);
    else if (arg.name == "A")
      pointers.push_back(a);
    else if (arg.name == "B")
      pointers.push_back(b);
    else if (arg.name == "bias")
      pointers.push_back(bias);
    else
      internal_error("the GEMM pipeline has an unexpected argument '", arg.name, "'");
  }
  return pointers;
}

/// Poisons `out` (every byte 0xFF, so an element the kernel does not write
/// reads as NaN), launches the GEMM `exe` at M x N x K on A, B, bias and
/// `out`, and waits for it; the launch's milliseconds between CUDA events.
inline double launch_gemm_into_poisoned(const GpuExecutable &exe, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias,
                                        gpu::DeviceBuffer &out, int M, int N, int K) {
  std::vector<CUdeviceptr> pointers = gemm_pointers(exe, a, b, bias, out.ptr());
  out.fill_bytes(0xFF);
  gpu::EventTimer timer;
  timer.start();
  exe.launch(pointers, {{"M", M}, {"N", N}, {"K", K}});
  timer.stop();
  gpu::synchronize();
  return timer.elapsed_ms();
}

} // namespace coalesce::bench
