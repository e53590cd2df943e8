#pragma once
// The tensor-core paths a GPU check section runs a schedule on: the warp
// MMA, and on sm_90a the warpgroup MMA with cp.async copies and with the
// TMA's; each with the library's tiling for a large shape.

#include "bench/common/Precisions.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <vector>

namespace coalesce::gpu_check {

enum class MmaPath { WarpMma, WarpgroupAsync, WarpgroupTma };

inline const char *mma_path_name(MmaPath p) {
  switch (p) {
  case MmaPath::WarpMma: return "warp MMA";
  case MmaPath::WarpgroupAsync: return "warpgroup MMA, cp.async";
  case MmaPath::WarpgroupTma: return "warpgroup MMA, TMA";
  }
  return "";
}

/// The paths this GPU has: the warp MMA, and the warpgroup MMA's two on sm_90a.
inline std::vector<MmaPath> device_mma_paths() {
  std::vector<MmaPath> all = {MmaPath::WarpMma};
  if (target_for_current_device().has_warpgroup_mma()) {
    all.push_back(MmaPath::WarpgroupAsync);
    all.push_back(MmaPath::WarpgroupTma);
  }
  return all;
}

/// default_mma_tiling for 4096 x 4096 at precision `p` on the path's
/// instruction, its copies the path's.
inline MmaTiling mma_path_tiling(bench::Precision p, MmaPath path) {
  const bool warpgroup = path != MmaPath::WarpMma;
  MmaTiling t = default_mma_tiling(bench::mma_kind(p, warpgroup), 4096, 4096, 132);
  if (warpgroup)
    t.tma = path == MmaPath::WarpgroupTma;
  return t;
}

} // namespace coalesce::gpu_check
