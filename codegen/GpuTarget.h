#pragma once
// Which GPU the PTX is for. Kept apart from the code generator so that the
// runtime and command-line tools can name a target without LLVM.

#include <string>
#include <utility>

namespace coalesce {

/// An NVIDIA GPU architecture that Coalesce generates PTX for. Only valid
/// targets exist: the default (sm_90a) or one returned by parse(), which
/// rejects an unsupported name with a UserError. An arbitrary `sm_XX` would
/// reach LLVM's NVPTX backend, which aborts the process ("Cannot select") on
/// instructions the architecture lacks instead of reporting an error.
class GpuTarget {
public:
  /// sm_90a (Hopper).
  GpuTarget() = default;
  /// "sm_80", "sm_86", "sm_89", "sm_90" or "sm_90a"; anything else is a
  /// UserError that lists the accepted names.
  static GpuTarget parse(const std::string &sm);

  /// The `sm_XX` name, as ptxas and LLVM's NVPTX backend spell it.
  const std::string &sm() const { return sm_; }

  /// The GPU the target's tuning is for, e.g. "NVIDIA H200 (Hopper)" for
  /// sm_90a: the one whose figures sm_count() gives.
  const char *description() const;
  /// The multiprocessors of that GPU (132 for sm_90a, the H200's). Tilings
  /// that aim to give every multiprocessor work take it when no device is
  /// at hand (ahead-of-time compilation, a machine without a GPU); with a
  /// device, callers take the device's own count (gpu::sm_count_for).
  int sm_count() const;

  /// What the code generator may use on this target: warpgroup MMAs
  /// (wgmma), the tensor memory accelerator's copies and clusters of blocks
  /// need the architecture-specific sm_90a (sm_90 has the hardware, but
  /// LLVM's NVPTX backend emits wgmma and setmaxnreg for sm_90a only; the
  /// compiler keeps all three together); mma.sync and cp.async run on every
  /// supported target.
  bool has_warpgroup_mma() const;
  bool has_tma() const;
  bool has_clusters() const;
  /// Whether PTX converts to and from the 8-bit floats here (cvt ...
  /// e4m3x2 / e5m2x2: sm_89 and later).
  bool has_fp8_conversions() const;
  /// Hopper (sm_90, sm_90a): 32-bit shared-memory addresses pay there.
  bool is_hopper() const;
  /// Whether a kernel can start during the previous one's tail and wait
  /// for it (griddepcontrol, programmatic dependent launch: sm_90 and
  /// later; KernelStart::DuringPreviousTail).
  bool has_grid_dependencies() const;

  /// The PTX ISA version to emit, times ten (80 = PTX 8.0). 8.0 is the lowest
  /// that admits sm_90a; ptxas 13.0 accepts it for every target we support,
  /// and drivers from CUDA 12.0 on load it.
  int ptx_version() const { return 80; }
  /// The LLVM subtarget feature that selects ptx_version(), e.g. "+ptx80".
  std::string ptx_feature() const { return "+ptx" + std::to_string(ptx_version()); }

private:
  explicit GpuTarget(std::string sm) : sm_(std::move(sm)) {}
  std::string sm_ = "sm_90a";
};

/// The names parse_gpu_target accepts, for messages: "sm_80, sm_86, ...".
const char *supported_gpu_targets();

/// GpuTarget::parse(sm).
GpuTarget parse_gpu_target(const std::string &sm);

} // namespace coalesce
