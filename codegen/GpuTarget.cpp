#include "codegen/GpuTarget.h"

#include "dsl/Error.h"

namespace coalesce {

namespace {
/// A supported target and the GPU its tuning figures are taken from.
struct TargetInfo {
  const char *sm;
  const char *description;
  int sm_count;
  bool hopper;
  bool fp8; // Ada and Hopper: cvt to and from e4m3 / e5m2 (GpuTarget::has_fp8_conversions)
  bool arch_specific; // sm_90a: wgmma, the TMA and clusters (GpuTarget::has_warpgroup_mma)
};

// Ampere (A100, A10/RTX 30), Ada (L4/RTX 40) and Hopper (H100/H200; sm_90a
// adds wgmma and the tensor memory accelerator). Each with the data-centre
// part of its architecture; sm_90a, the default, with the H200 the
// measurements in docs/performance.md were made on.
const TargetInfo kSupported[] = {
    {"sm_80", "NVIDIA A100 (Ampere)", 108, false, false, false},
    {"sm_86", "NVIDIA A10 (Ampere)", 72, false, false, false},
    {"sm_89", "NVIDIA L4 (Ada)", 58, false, true, false},
    {"sm_90", "NVIDIA H100 SXM (Hopper)", 132, true, true, false},
    {"sm_90a", "NVIDIA H200 (Hopper)", 132, true, true, true}};

const TargetInfo &info_of(const std::string &sm) {
  for (const TargetInfo &info : kSupported)
    if (sm == info.sm)
      return info;
  internal_error("GpuTarget '", sm, "' is not in the table of supported targets");
}
} // namespace

const char *supported_gpu_targets() { return "sm_80, sm_86, sm_89, sm_90, sm_90a"; }

GpuTarget GpuTarget::parse(const std::string &sm) {
  for (const TargetInfo &info : kSupported)
    if (sm == info.sm)
      return GpuTarget(sm);
  user_error("unknown GPU target '", sm, "': expected one of ", supported_gpu_targets());
}

const char *GpuTarget::description() const { return info_of(sm_).description; }

int GpuTarget::sm_count() const { return info_of(sm_).sm_count; }

bool GpuTarget::has_warpgroup_mma() const { return info_of(sm_).arch_specific; }
bool GpuTarget::has_tma() const { return info_of(sm_).arch_specific; }
bool GpuTarget::has_clusters() const { return info_of(sm_).arch_specific; }
bool GpuTarget::has_fp8_conversions() const { return info_of(sm_).fp8; }
bool GpuTarget::is_hopper() const { return info_of(sm_).hopper; }
bool GpuTarget::has_grid_dependencies() const { return info_of(sm_).hopper; }

GpuTarget parse_gpu_target(const std::string &sm) { return GpuTarget::parse(sm); }

} // namespace coalesce
