#include "runtime/TuningSpace.h"

#include <algorithm>

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

void add_unique(std::vector<GemmCandidate> &out, const GemmCandidate &candidate) {
  if (std::find(out.begin(), out.end(), candidate) == out.end())
    out.push_back(candidate);
}

} // namespace

TuningSpace default_tuning_space(const GemmProblem &problem, const std::string &sm, int sm_count) {
  TuningSpace space;
  FfmaSpace &f = space.ffma;
  f.blocks = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {256, 128}, {128, 256}};
  f.registers = {{8, 8}, {8, 4}, {4, 8}, {4, 4}};
  f.k_steps = {8, 16};
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
  w.split_k = split_choices(problem, w.blocks, w.k_steps.front(), 128, sm_count);

  MmaSpace &g = space.warpgroup_mma;
  if (sm == "sm_90a" && (problem.dtype == "bf16" || problem.dtype == "f16")) {
    g.families = {GemmFamily::WarpgroupMma};
    g.blocks = {{128, 128}, {128, 256}, {256, 128}, {128, 64}, {64, 128}};
    g.warp_tiles = {{64, 128}, {64, 64}, {64, 256}};
    g.k_steps = {64};
    g.stages = {3, 4};
    g.min_blocks_per_sm = {1, 2};
    g.block_group_rows = {0, 8};
    g.split_k = split_choices(problem, g.blocks, 64, 256, sm_count);
  }
  return space;
}

std::vector<GemmCandidate> enumerate_candidates(const GemmProblem &problem, const TuningSpace &space,
                                                const GemmCandidate &first) {
  std::vector<GemmCandidate> out = {first};
  if (!problem.tensor_cores()) {
    const FfmaSpace &f = space.ffma;
    for (const Extent2 &block : f.blocks)
      for (const Extent2 &registers : f.registers)
        for (int k_step : f.k_steps)
          for (int groups : f.block_group_rows)
            for (int split : f.split_k) {
              GemmCandidate c;
              c.ffma = first.family == GemmFamily::Ffma ? first.ffma : GemmTiling{};
              c.ffma.block_m = block.first;
              c.ffma.block_n = block.second;
              c.ffma.threads_m = std::max(1, block.first / registers.first);
              c.ffma.threads_n = std::max(1, block.second / registers.second);
              c.ffma.k_step = k_step;
              c.ffma.block_group_rows = groups;
              c.ffma.split_k = split;
              add_unique(out, c);
            }
    return out;
  }
  for (const MmaSpace *m : {&space.warpgroup_mma, &space.warp_mma})
    for (GemmFamily family : m->families)
      for (const Extent2 &block : m->blocks)
        for (const Extent2 &warp : m->warp_tiles)
          for (int k_step : m->k_steps)
            for (int stages : m->stages)
              for (int min_blocks : m->min_blocks_per_sm)
                for (int groups : m->block_group_rows)
                  for (int split : m->split_k) {
                    GemmCandidate c;
                    c.family = family;
                    c.mma = default_mma_tiling(gemm_mma_kind(problem, family), problem.M, problem.N);
                    c.mma.block_m = block.first;
                    c.mma.block_n = block.second;
                    c.mma.warp_m = warp.first;
                    c.mma.warp_n = warp.second;
                    c.mma.k_step = k_step;
                    c.mma.stages = stages;
                    c.mma.double_buffered = stages >= 2;
                    c.mma.min_blocks_per_sm = min_blocks;
                    c.mma.block_group_rows = groups;
                    c.mma.split_k = split;
                    add_unique(out, c);
                  }
  return out;
}

std::vector<GemmCandidate> spread_sample(const std::vector<GemmCandidate> &candidates, size_t limit) {
  if (candidates.size() <= limit || limit == 0)
    return limit == 0 ? std::vector<GemmCandidate>{} : candidates;
  std::vector<GemmCandidate> out = {candidates.front()};
  size_t rest = candidates.size() - 1, wanted = limit - 1;
  for (size_t n = 0; n < wanted; ++n)
    out.push_back(candidates[1 + n * rest / wanted]);
  return out;
}

} // namespace coalesce
