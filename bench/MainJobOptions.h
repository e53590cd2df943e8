#pragma once
// coalesce-main's command line: the shape, the element type, the schedule's
// knobs and the tuning flags, parsed with llvm::cl (MainJobOptions.cpp).

#include "bench/common/Precisions.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <optional>
#include <string>
#include <vector>

namespace coalesce::main_job {

struct Shape {
  int M, N, K;
};

constexpr Shape kGpuShape{4096, 4096, 4096};
constexpr Shape kCpuShape{256, 320, 200}; // ragged: no dimension a multiple of the tiles

/// The FFMA schedule's knobs that coalesce-main's flags set (0: the
/// tiling's choice).
struct FfmaKnobs {
  int stages = 0;                   ///< --stages=N: GemmTiling::stages
  int warp_rows = 0, warp_cols = 0; ///< --warp-layout=RxC: GemmTiling::warp_rows/warp_cols
  bool zero_fill = false;           ///< --zero-fill: GemmTiling::zero_fill
};

/// Knobs of the warpgroup MMA's copies.
struct WgmmaKnobs {
  bool cp_async = false;   ///< --cp-async: every thread's cp.async instead of the TMA
  int producer_warps = -1; ///< --producer-warps=N: MmaTiling::producer_warps (-1: the tiling's)
  int producer_registers = -1; ///< --producer-registers=N: MmaTiling::producer_registers (-1: the tiling's)
  int persistent_blocks = -1;  ///< --persistent-blocks=N: MmaTiling::persistent_blocks (-1: the tiling's)
  int cluster_blocks = -1;     ///< --cluster-blocks=N: MmaTiling::cluster_blocks (-1: the tiling's)
  int split_k = -1;            ///< --split-k=N: MmaTiling::split_k (-1: the tiling's)
  int split_k_tail = -1;       ///< --split-k-tail=R: MmaTiling::split_k_tail_rows (-1: the tiling's)
  std::optional<TileStores> tile_stores; ///< --tile-stores=direct|shared: MmaTiling::tile_stores
  /// --consumer-schedule=together|ping-pong: MmaTiling::consumer_schedule
  ConsumerSchedule consumer_schedule = ConsumerSchedule::Together;
};

struct Options {
  Shape shape = kGpuShape;
  bool shape_given = false;
  Type dtype = Float(32);
  bool tensor_cores = false;
  bool warpgroup = false; ///< --wgmma: warpgroup MMAs (sm_90a; f32 inputs as tf32)
  WgmmaKnobs wgmma;      ///< --cp-async, --producer-warps
  int block_groups = -1;  ///< --block-groups=N: gpu_block_groups(N) (0: none; -1: the tiling's choice)
  /// --mma-tiling=BMxBNxWMxWNxKSxMB[xST] (block, warp tile, k step, blocks per SM, stages).
  std::vector<int> mma_tiling;
  FfmaKnobs ffma;
  std::string tuning_db; ///< --tuning-db=PATH: the tiling recorded there (docs/tuning.md)
  bool autotune = false; ///< --autotune: search the tiling on this GPU first
  int autotune_candidates = 50;
};

/// The precision of cuBLAS to compare with: the inputs' type, and for f32
/// inputs on tensor cores, tf32 (as the MMA rounds them).
bench::Precision precision_of(const Options &options);

/// Prints `message` and the hint to --help on stderr and exits with 2.
[[noreturn]] void usage_error(const std::string &message);

/// The flags; a bad one exits with 2 (usage_error), --help with 0.
Options parse_options(int argc, char **argv);

} // namespace coalesce::main_job
