// The tensor cores' GEMM + bias + exact GELU with its tiles' sums staged
// in shared memory and the epilogue computed in the copy-out
// (TileStores::SumsThroughShared), per precision (bf16 and f16 out for
// 16-bit inputs, f32 for tf32):
//
//   - the 128 x 256 tiling of two warpgroups (the large shapes' default),
//     128 x 128 tiles on a persistent grid of 7 blocks with a producer
//     warpgroup that keeps 40 registers, 256 x 128 tiles of 128-row
//     warpgroups, and the warp MMA's default with three stages and 128 x
//     64 tiles with two (double buffering), at whole tiles (512x768x256), at
//     ragged tiles whose rows are whole 16-byte vectors (515x776x259) and
//     at rows that are not (515x777x259: the element copy);
//   - each against the same tiling storing directly: the same bits (the
//     epilogue's expression is the same, only where it runs moves), and
//     against the double reference on 8 sampled rows (every column).
// The output is poisoned (0xFF) before each launch and every element read
// back must be finite.

#include "bench/gpu_check/TileStoresCheck.h"

#include "bench/gpu_check/SameBitsCheck.h"

#include "bench/common/GemmPointers.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "runtime/GpuExecutable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;
using examples::Epilogue;

const std::vector<BitsShape> kShapes = {{512, 768, 256}, {515, 776, 259}, {515, 777, 259}};

/// A tiling checked, and its name in the report.
struct NamedTiling {
  std::string name;
  MmaTiling tiling;
};

/// The tilings checked: the 128 x 256 default of two warpgroups; 128 x 128
/// on a persistent grid with a producer warpgroup keeping 40 registers;
/// 256 x 128 of two 128-row warpgroups; the warp MMA's default (three
/// stages: the staged tile takes the slots' bytes after the loop) and 128
/// x 64 tiles double buffered (two stages, whose loop keeps the tile
/// apart from the slots: scheduler/SharedTileLayout.h).
std::vector<NamedTiling> tilings(Precision p) {
  const int sm_count = gpu::Device::get().sm_count();
  MmaTiling wide = default_mma_tiling(bench::mma_kind(p, true), 4096, 4096, 4096, sm_count);
  MmaTiling persistent = wide;
  persistent.block_n = 128;
  persistent.warp_n = 128;
  persistent.stages = 3;
  persistent.persistent_blocks = 7;
  persistent.producer_warps = 4;
  persistent.producer_registers = 40;
  MmaTiling rows256 = wide; // two warpgroups of 128 rows each
  rows256.block_m = 256;
  rows256.block_n = 128;
  rows256.warp_m = 128;
  rows256.warp_n = 128;
  rows256.stages = 3;
  MmaTiling warp = default_mma_tiling(bench::mma_kind(p, false), 4096, 4096, 4096, sm_count);
  MmaTiling double_buffered = warp; // its tile beside the two stages: 128 x 64
  double_buffered.stages = 2;
  double_buffered.block_n = 64;
  double_buffered.warp_n = std::min(double_buffered.warp_n, 64);
  return {{"128x256", wide},
          {"persistent, producer warps", persistent},
          {"256x128 of 128-row warpgroups", rows256},
          {"warp MMA", warp},
          {"warp MMA, double buffered", double_buffered}};
}

std::unique_ptr<Pipeline> pipeline_for(Precision p, MmaTiling t, TileStores stores) {
  t.tile_stores = stores;
  return bias_gelu_pipeline(p, t);
}

/// The tiling's sums staged, against the same tiling storing directly.
void check_one(Precision p, const MmaTiling &tiling, SameBitsKernels &kernels, const BitsShape &s,
               const std::string &name) {
  auto make = [&] {
    SameBitsKernels made{pipeline_for(p, tiling, TileStores::SumsThroughShared),
                         pipeline_for(p, tiling, TileStores::Direct)};
    if (made.tested->loop_nest().find("acc_tile") == std::string::npos)
      throw std::runtime_error("the sums were not staged (no acc_tile in the loop nest)");
    return made;
  };
  check_same_bits(p, make, kernels, s, name, tiling.str(), "direct stores' bits");
}

} // namespace

void check_tile_stores(Precision p) {
  if (p == Precision::FP32 || !target_for_current_device().has_warpgroup_mma())
    return;
  std::printf("\n==== %s: the epilogue computed from sums staged in shared memory ====\n",
              reference::precision_name(p));
  for (const NamedTiling &t : tilings(p)) {
    SameBitsKernels kernels;
    for (const BitsShape &s : kShapes)
      check_one(p, t.tiling, kernels, s, std::string(reference::precision_name(p)) + " sums staged, " + t.name);
  }
}

void tile_stores_sanitizer_case() {
  for (const NamedTiling &t : tilings(Precision::BF16)) {
    SameBitsKernels kernels;
    // Ragged (the general kernel) and aligned (the kernel specialized for
    // sizes that are multiples of 16, scheduler/SpecializeSizes.h).
    check_one(Precision::BF16, t.tiling, kernels, {131, 264, 200}, "bf16 sums staged, " + t.name + " (sanitizer)");
    check_one(Precision::BF16, t.tiling, kernels, {256, 384, 192},
              "bf16 sums staged, " + t.name + ", aligned (sanitizer)");
  }
}

} // namespace coalesce::gpu_check
