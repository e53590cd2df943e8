#pragma once
// The autotuner's search space, declared knob by knob from the schedule
// recipes' knob structs (GemmTiling, MmaTiling): every combination of the
// listed values is a candidate. Combinations the library refuses are not
// filtered here: the autotuner's legality step refuses them and counts them
// by rule, so the space can be declared plainly.

#include "runtime/GemmCandidate.h"
#include "runtime/TuningProblem.h"

#include <utility>
#include <vector>

namespace coalesce {

/// A pair of extents: (rows, columns).
using Extent2 = std::pair<int, int>;

/// The FFMA schedule's knobs (GemmTiling).
struct FfmaSpace {
  std::vector<Extent2> blocks;    ///< block_m x block_n
  std::vector<Extent2> registers; ///< outputs per thread (threads = block / registers)
  std::vector<int> k_steps;
  std::vector<int> stages;        ///< tiles in shared memory per K step (GemmTiling::stages)
  std::vector<Extent2> warp_layouts; ///< warp_rows x warp_cols (0 x 0: row order)
  std::vector<int> block_group_rows;
  std::vector<int> split_k; ///< slices of K (1: none)
};

/// Who feeds a warpgroup MMA's pipeline and how the blocks walk the tiles
/// (MmaTiling's producer_warps, producer_registers, persistent_blocks,
/// cluster_blocks), as a closed set of the forms that run on the GPU:
enum class PipelineRoles {
  /// The MMA warps' first thread issues the copies; a block per tile.
  MmaWarps,
  /// A producer warpgroup that keeps 40 registers issues them, on a
  /// persistent grid of a block per multiprocessor: one pipeline across
  /// each block's tiles.
  ProducerAcrossTiles,
  /// The same producer warpgroup, a block per tile, in clusters of two
  /// block rows that multicast B's tiles.
  ProducerInClusters,
  /// Both: the persistent grid (of the even number of blocks at most one
  /// per multiprocessor) walking the tiles by clusters of two block rows
  /// that multicast B's tiles.
  ProducerAcrossTilesInClusters,
};
const char *pipeline_roles_name(PipelineRoles roles);

/// The tensor-core schedule's knobs (MmaTiling), per MMA family.
struct MmaSpace {
  std::vector<GemmFamily> families; ///< WarpMma and/or WarpgroupMma
  std::vector<Extent2> blocks;      ///< block_m x block_n
  std::vector<Extent2> warp_tiles;  ///< warp_m x warp_n (a warpgroup's 64 x N tile for warpgroup MMA)
  std::vector<int> k_steps;
  std::vector<int> stages;
  std::vector<int> min_blocks_per_sm;
  std::vector<int> block_group_rows;
  std::vector<bool> tma; ///< warpgroup MMA: copy the tiles with the TMA (MmaTiling::tma)
  std::vector<int> split_k;
  std::vector<PipelineRoles> roles = {PipelineRoles::MmaWarps}; ///< with the TMA's copies
  std::vector<TileStores> tile_stores = {TileStores::Direct};   ///< how blocks store their output tiles
};

struct TuningSpace {
  FfmaSpace ffma;            ///< used for dtype f32
  MmaSpace warp_mma;         ///< used for tf32, bf16, f16 (family WarpMma)
  MmaSpace warpgroup_mma;    ///< used for bf16, f16 on sm_90a (family WarpgroupMma)
  int sm_count = 0;          ///< the GPU's multiprocessors, for the recipes' defaults
};

/// The space the tools search: around the library's defaults for the
/// problem's precision; the warpgroup family only for bf16/f16 on sm_90a;
/// split-K counts 1 and default_split_k's choice where that is not 1.
TuningSpace default_tuning_space(const GemmProblem &problem, const std::string &sm, int sm_count = 132);

/// Every combination of the space's knobs for the problem, `first` (the
/// default candidate) first and no candidate twice.
std::vector<GemmCandidate> enumerate_candidates(const GemmProblem &problem, const TuningSpace &space,
                                                const GemmCandidate &first);

/// At most `limit` indices of [0, count): 0, then evenly spaced ones from
/// the rest (so every part of the space keeps representatives), ascending.
std::vector<size_t> spread_indices(size_t count, size_t limit);
/// The candidates at spread_indices(candidates.size(), limit).
std::vector<GemmCandidate> spread_sample(const std::vector<GemmCandidate> &candidates, size_t limit);

} // namespace coalesce
