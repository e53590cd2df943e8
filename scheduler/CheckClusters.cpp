#include "scheduler/CheckClusters.h"

#include "dsl/Error.h"
#include "scheduler/LoopNames.h"

#include <algorithm>

namespace coalesce {

namespace {

void check_cluster_loop(const FuncContents &output) {
  const FuncSchedule &schedule = output.schedule;
  const std::string &var = schedule.cluster_var;
  std::string where = str_cat("in schedule for '", output.name, "': gpu_cluster(", var, ", ",
                              schedule.cluster_blocks, ")");
  const StageSchedule &pure = schedule.stages.front();
  auto dim = std::find_if(pure.dims.begin(), pure.dims.end(), [&](const Dim &d) { return d.var == var; });
  if (dim == pure.dims.end() || dim->kind != ForKind::GpuBlock)
    user_error(where, " clusters blocks along '", var, "', which is not one of the output's loops mapped to GPU "
               "blocks (gpu_blocks); cluster along a block loop");
  // Rounding the loop up to whole clusters needs a guard for the blocks
  // past the last tile: the split's.
  bool split_outer = std::any_of(pure.splits.begin(), pure.splits.end(),
                                 [&](const Split &s) { return !s.is_fuse && s.outer == var; });
  if (!split_outer)
    user_error(where, ": '", var, "' is not the outer loop of a split (tile or split), so the blocks that round "
               "it up to whole clusters would have no guard to keep them past the output's end; cluster along the "
               "outer loop of a tile");
  if (schedule.split_k.requested())
    user_error(where, " with split_k: the slices' workspace and their combine count one block per tile, not the "
               "blocks that round a cluster up; use one or the other");
  // A persistent grid walks the tiles by whole clusters (PersistentBlocks.h).
  if (schedule.persistent_blocks > 0 && schedule.persistent_blocks % schedule.cluster_blocks != 0)
    user_error(where, " with gpu_persistent_blocks(", schedule.persistent_blocks,
               "): the grid's blocks walk the "
               "tiles by whole clusters, so it must be a multiple of ",
               schedule.cluster_blocks, " blocks; use gpu_persistent_blocks(",
               std::max(schedule.cluster_blocks,
                        schedule.persistent_blocks / schedule.cluster_blocks * schedule.cluster_blocks),
               ")");
  if (schedule.block_group_rows > 0)
    user_error(where, " with gpu_block_groups: the grouped order puts blocks of different tiles of the shared "
               "input in one cluster; use one or the other");
}

} // namespace

void check_clusters(const Environment &env) {
  const FuncContents &output = env.output();
  for (const FuncContents &func : env.funcs)
    if (func.schedule.cluster_blocks > 0 && func.name != output.name)
      user_error("in schedule for '", func.name, "': gpu_cluster applies to the kernels of the output; '",
                 func.name, "' is computed inside them: cluster the blocks of '", output.name, "'");
  if (output.schedule.cluster_blocks > 0)
    check_cluster_loop(output);
}

} // namespace coalesce
