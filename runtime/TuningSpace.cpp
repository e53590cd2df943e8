#include "runtime/TuningSpace.h"

#include "codegen/GpuTarget.h"

#include <algorithm>
#include <functional>

namespace coalesce {

namespace {

// The split counts worth trying for a tile of block_m x block_n: none, and
// the library's choice for it when that splits.
std::vector<int> split_choices(const GemmProblem &problem, const std::vector<Extent2> &blocks, int k_step,
                               int threads, int sm_count) {
  std::vector<int> splits = {1};
  for (const Extent2 &block : blocks) {
    int64_t tiles = ((problem.M + block.first - 1) / block.first) * ((problem.N + block.second - 1) / block.second);
    int split = default_split_k(tiles, problem.K, k_step, sm_count, split_k_blocks_per_sm(threads));
    if (std::find(splits.begin(), splits.end(), split) == splits.end())
      splits.push_back(split);
  }
  return splits;
}

// Calls visit(at) for every combination of indices into lists of the given
// sizes (at[n] < sizes[n]), the last index varying fastest; none when a
// list is empty.
void for_each_combination(const std::vector<size_t> &sizes,
                          const std::function<void(const std::vector<size_t> &)> &visit) {
  for (size_t size : sizes)
    if (size == 0)
      return;
  std::vector<size_t> at(sizes.size(), 0);
  for (;;) {
    visit(at);
    size_t n = sizes.size();
    while (n > 0 && ++at[n - 1] == sizes[n - 1])
      at[--n] = 0;
    if (n == 0)
      return;
  }
}

void add_unique(std::vector<GemmCandidate> &out, const GemmCandidate &candidate) {
  if (std::find(out.begin(), out.end(), candidate) == out.end())
    out.push_back(candidate);
}

// `t` with the roles' knobs set (MmaTiling).
void apply_roles(PipelineRoles roles, int sm_count, MmaTiling &t) {
  switch (roles) {
  case PipelineRoles::MmaWarps:
    return;
  case PipelineRoles::ProducerAcrossTiles:
    t.producer_warps = 4;
    t.producer_registers = 40;
    t.persistent_blocks = sm_count;
    return;
  case PipelineRoles::ProducerInClusters:
    t.producer_warps = 4;
    t.producer_registers = 40;
    t.cluster_blocks = 2;
    return;
  case PipelineRoles::ProducerAcrossTilesInClusters:
    t.producer_warps = 4;
    t.producer_registers = 40;
    t.cluster_blocks = 2;
    t.persistent_blocks = std::max(2, sm_count / 2 * 2); // whole clusters
    return;
  }
}

} // namespace

const char *pipeline_roles_name(PipelineRoles roles) {
  switch (roles) {
  case PipelineRoles::MmaWarps: return "mma-warps";
  case PipelineRoles::ProducerAcrossTiles: return "producer-across-tiles";
  case PipelineRoles::ProducerInClusters: return "producer-in-clusters";
  case PipelineRoles::ProducerAcrossTilesInClusters: return "producer-across-tiles-in-clusters";
  }
  return "?";
}

TuningSpace default_tuning_space(const GemmProblem &problem, const std::string &sm, int sm_count) {
  TuningSpace space;
  space.sm_count = sm_count;
  FfmaSpace &f = space.ffma;
  f.blocks = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {256, 128}, {128, 256}};
  f.registers = {{8, 8}, {8, 4}, {4, 8}, {4, 4}};
  f.k_steps = {8, 16};
  f.stages = {2, 3};
  f.warp_layouts = {{0, 0}, {4, 8}, {8, 4}};
  f.block_group_rows = {0, 8};
  f.split_k = split_choices(problem, f.blocks, 8, 256, sm_count);

  MmaSpace &w = space.warp_mma;
  w.families = {GemmFamily::WarpMma};
  w.blocks = {{128, 128}, {128, 256}, {256, 128}, {128, 64}, {64, 64}};
  w.warp_tiles = {{64, 64}, {64, 32}, {32, 32}};
  w.k_steps = problem.dtype == "tf32" ? std::vector<int>{16, 32} : std::vector<int>{32, 64};
  w.stages = {2, 3, 4};
  w.min_blocks_per_sm = {problem.dtype == "tf32" ? 1 : 2};
  w.block_group_rows = {0, 8};
  w.tma = {false};
  w.split_k = split_choices(problem, w.blocks, w.k_steps.front(), 128, sm_count);
  // The sums staged (the default) or each thread's stores.
  w.tile_stores = {TileStores::Direct, TileStores::SumsThroughShared};

  MmaSpace &g = space.warpgroup_mma;
  if (parse_gpu_target(sm).has_warpgroup_mma()) {
    // k step: one 128-byte swizzled row (64 bf16/f16, 32 tf32). tf32 only
    // with the TMA (from the copies it makes first): its cp.async copies
    // were slower than the warp MMA at every tiling measured.
    const bool tf32 = problem.dtype == "tf32";
    g.families = {GemmFamily::WarpgroupMma};
    g.blocks = {{128, 128}, {128, 256}, {256, 128}, {128, 64}, {64, 128}};
    // 128 x 128: a warpgroup of 128 rows (two m64 MMAs a k16), two of them
    // on 256 x 128 (cuBLAS's tile: on an H100, 1.025x its GEMM at 8192^3
    // in one session, no better than the default in the next).
    g.warp_tiles = {{64, 128}, {64, 64}, {64, 256}, {128, 128}};
    g.k_steps = {tf32 ? 32 : 64};
    g.stages = {3, 4};
    g.min_blocks_per_sm = {1, 2};
    g.block_group_rows = {0, 8};
    g.tma = tf32 ? std::vector<bool>{true} : std::vector<bool>{false, true};
    g.split_k = split_choices(problem, g.blocks, g.k_steps.front(), 256, sm_count);
    g.roles = {PipelineRoles::MmaWarps, PipelineRoles::ProducerAcrossTiles, PipelineRoles::ProducerInClusters,
               PipelineRoles::ProducerAcrossTilesInClusters};
    // The values through shared memory where the output is 16-bit (a
    // wider one's tile does not fit beside the pipeline, and the recipe
    // stores it directly), and the sums (the default).
    if (problem.out_dtype == "bf16" || problem.out_dtype == "f16")
      g.tile_stores = {TileStores::Direct, TileStores::ThroughShared, TileStores::SumsThroughShared};
    else
      g.tile_stores = {TileStores::Direct, TileStores::SumsThroughShared};
  }
  return space;
}

std::vector<GemmCandidate> enumerate_candidates(const GemmProblem &problem, const TuningSpace &space,
                                                const GemmCandidate &first) {
  std::vector<GemmCandidate> out = {first};
  if (!problem.tensor_cores()) {
    const FfmaSpace &f = space.ffma;
    for_each_combination(
        {f.blocks.size(), f.registers.size(), f.k_steps.size(), f.block_group_rows.size(), f.split_k.size(),
         f.stages.size(), f.warp_layouts.size()},
        [&](const std::vector<size_t> &at) {
          GemmCandidate c;
          c.ffma = first.family == GemmFamily::Ffma ? first.ffma : GemmTiling{};
          const Extent2 &block = f.blocks[at[0]], &registers = f.registers[at[1]];
          c.ffma.block_m = block.first;
          c.ffma.block_n = block.second;
          c.ffma.threads_m = std::max(1, block.first / registers.first);
          c.ffma.threads_n = std::max(1, block.second / registers.second);
          c.ffma.k_step = f.k_steps[at[2]];
          c.ffma.block_group_rows = f.block_group_rows[at[3]];
          c.ffma.split_k = f.split_k[at[4]];
          c.ffma.stages = f.stages[at[5]];
          c.ffma.warp_rows = f.warp_layouts[at[6]].first;
          c.ffma.warp_cols = f.warp_layouts[at[6]].second;
          add_unique(out, c);
        });
    return out;
  }
  for (const MmaSpace *m : {&space.warpgroup_mma, &space.warp_mma})
    for (GemmFamily family : m->families)
      for_each_combination({m->blocks.size(), m->warp_tiles.size(), m->k_steps.size(), m->stages.size(),
                            m->min_blocks_per_sm.size(), m->block_group_rows.size(), m->tma.size(),
                            m->split_k.size(), m->roles.size(), m->tile_stores.size()},
                           [&](const std::vector<size_t> &at) {
                             GemmCandidate c;
                             c.family = family;
                             c.mma = default_mma_tiling(gemm_mma_kind(problem, family), problem.M, problem.N, space.sm_count);
                             c.mma.block_m = m->blocks[at[0]].first;
                             c.mma.block_n = m->blocks[at[0]].second;
                             c.mma.warp_m = m->warp_tiles[at[1]].first;
                             c.mma.warp_n = m->warp_tiles[at[1]].second;
                             // A warp tile that does not divide the block's tile
                             // is refused by mma_tile whatever the other knobs.
                             if (c.mma.block_m % c.mma.warp_m != 0 || c.mma.block_n % c.mma.warp_n != 0)
                               return;
                             c.mma.k_step = m->k_steps[at[2]];
                             c.mma.stages = m->stages[at[3]];
                             c.mma.double_buffered = c.mma.stages >= 2;
                             c.mma.min_blocks_per_sm = m->min_blocks_per_sm[at[4]];
                             c.mma.block_group_rows = m->block_group_rows[at[5]];
                             c.mma.tma = m->tma[at[6]];
                             c.mma.split_k = m->split_k[at[7]];
                             // The warpgroup tiles' slices combine in a kernel of
                             // their own, as the default's do (the last block's
                             // combine was slower at every split measured:
                             // docs/performance.md).
                             if (is_warpgroup_mma(c.mma.kind) && c.mma.split_k > 1)
                               c.mma.split_k_mode = SplitKMode::CombineKernel;
                             // Producer warps feed the TMA's pipeline only.
                             if (m->roles[at[8]] != PipelineRoles::MmaWarps && !c.mma.tma)
                               return;
                             // The other roles' persistent grids and clusters
                             // walk whole tiles: split-K is refused beside them.
                             if (m->roles[at[8]] != PipelineRoles::MmaWarps && c.mma.split_k > 1)
                               return;
                             // The sums (f32, twice the values' bytes) take the
                             // slots' bytes once the main loop is done; beside the
                             // stages of a pipeline that runs on (producer warps,
                             // SharedTileLayout.h) the values' tile is the one
                             // that fits.
                             if (m->tile_stores[at[9]] == TileStores::SumsThroughShared &&
                                 m->roles[at[8]] != PipelineRoles::MmaWarps)
                               return;
                             apply_roles(m->roles[at[8]], space.sm_count, c.mma);
                             c.mma.tile_stores = m->tile_stores[at[9]];
                             // Sums that fit no block with their stages are the
                             // other stores' candidate.
                             MmaTiling fitted = c.mma;
                             stage_values_where_sums_do_not_fit(fitted);
                             if (fitted.tile_stores != c.mma.tile_stores)
                               return;
                             add_unique(out, c);
                           });
  return out;
}

std::vector<size_t> spread_indices(size_t count, size_t limit) {
  std::vector<size_t> out;
  if (count == 0 || limit == 0)
    return out;
  if (count <= limit) {
    for (size_t n = 0; n < count; ++n)
      out.push_back(n);
    return out;
  }
  out.push_back(0);
  size_t rest = count - 1, wanted = limit - 1; // rest > wanted: the steps are at least 1
  for (size_t n = 0; n < wanted; ++n)
    out.push_back(1 + n * rest / wanted);
  return out;
}

std::vector<GemmCandidate> spread_sample(const std::vector<GemmCandidate> &candidates, size_t limit) {
  std::vector<GemmCandidate> out;
  for (size_t n : spread_indices(candidates.size(), limit))
    out.push_back(candidates[n]);
  return out;
}

} // namespace coalesce
