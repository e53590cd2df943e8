#include "codegen/GpuTarget.h"

#include "dsl/Error.h"

namespace coalesce {

namespace {
// Ampere (A100, A10/RTX 30), Ada (L4/RTX 40) and Hopper (H100/H200; sm_90a
// adds wgmma and the tensor memory accelerator).
const char *const kSupported[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
} // namespace

const char *supported_gpu_targets() { return "sm_80, sm_86, sm_89, sm_90, sm_90a"; }

GpuTarget GpuTarget::parse(const std::string &sm) {
  for (const char *name : kSupported)
    if (sm == name)
      return GpuTarget(sm);
  user_error("unknown GPU target '", sm, "': expected one of ", supported_gpu_targets());
}

GpuTarget parse_gpu_target(const std::string &sm) { return GpuTarget::parse(sm); }

} // namespace coalesce
