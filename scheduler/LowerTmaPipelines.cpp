#include "scheduler/LowerTmaPipelines.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"
#include "scheduler/StageWithTma.h"
#include "scheduler/StagedTile.h"
#include "scheduler/StagedTileRegion.h"
#include "scheduler/StagingLoops.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <map>
#include <optional>

namespace coalesce {

namespace {

using namespace staging;

// The TMA pipelines of one staging loop: each TmaStaging mark of the loop
// becomes the pipeline StageWithTma builds, planned from the loop the mark
// holds (its tiles planned again, as staging planned them), with the mark's
// cp.async pipeline as its fallback.
class LowerAtLoop : public StagingSiteMutator {
public:
  using StagingSiteMutator::StagingSiteMutator;

private:
  using IRMutator::visit;

  // A persistent block's tile loop. Where a pipeline inside it runs across
  // its tiles, the loop becomes (StageWithTma.h, TmaPipelineAcrossTiles)
  //
  //   allocate the tiles and barriers
  //     if describable: setup; for tile: <body, the pipeline's per-tile part>; teardown
  //     else:           fallback setup; for tile: <body, the cp.async pipeline>
  //
  // The condition depends on the inputs' extents only, so taking it out
  // of the loop changes no tile's work.
  Stmt visit_tiles(const For *op, const Stmt &self) {
    const For *outer = tiles_loop_;
    tiles_loop_ = op;
    Stmt result = IRMutator::visit(op, self);
    tiles_loop_ = outer;
    if (!across_)
      return result;
    AcrossTiles across = std::move(*across_);
    across_.reset();
    const auto *loop = result.as<For>();
    const TmaPipelineAcrossTiles &parts = across.parts;
    auto tiles_with = [&](const Stmt &pipeline) {
      Stmt body = ReplaceStmt(across.per_tile, pipeline).mutate(loop->body);
      return For::make(loop->name, loop->min, loop->extent, loop->for_kind, body, loop->gpu_dim, loop->reduction_of,
                       loop->role);
    };
    Stmt s = Block::make({parts.setup, tiles_with(parts.per_tile), parts.teardown});
    if (parts.describable.defined())
      s = IfThenElse::make(parts.describable, s,
                           Block::make({parts.fallback_setup, tiles_with(parts.fallback_per_tile)}));
    for (auto array = parts.barrier_arrays.rbegin(); array != parts.barrier_arrays.rend(); ++array)
      s = Allocate::make(*array, UInt(64), MemoryType::Shared, {Expr(across.stages)}, s);
    return allocate_tiles(across.tiles, across.stages, s);
  }

  // `s` with the statement `from` (the same node) replaced by `to`.
  class ReplaceStmt : public IRMutator {
  public:
    ReplaceStmt(Stmt from, Stmt to) : from_(std::move(from)), to_(std::move(to)) {}

  private:
    using IRMutator::visit;
    Stmt from_, to_;
    Stmt visit(const Block *op, const Stmt &self) override {
      return self.same_as(from_) ? to_ : IRMutator::visit(op, self);
    }
    Stmt visit(const IfThenElse *op, const Stmt &self) override {
      return self.same_as(from_) ? to_ : IRMutator::visit(op, self);
    }
  };

  // Where the staging loop `op` runs a TMA pipeline with producer warps
  // inside a persistent block's tile loop, and every tile runs the same
  // steps (the loop's bounds read parameters only): the steps of the
  // block's tiles before this one, from which the pipeline counts its
  // slots and phases so that it runs across the tiles. Else undefined; so
  // also for a second pipeline in the same tile loop, which keeps a
  // pipeline per tile (the tile loop places one pipeline's parts).
  Expr steps_before_tile(const For *op, const std::vector<StagedTile> &tiles) const {
    if (!tiles_loop_ || across_ || producer_warp_count(tiles.front().copies) == 0)
      return Expr();
    for (const Expr &bound : {op->min, op->extent})
      for (const Variable *v : variables_of(bound))
        if (v->variable_kind != VariableKind::Param)
          return Expr();
    Expr tile = Variable::make(Int(32), tiles_loop_->name);
    return simplify((tile - tiles_loop_->min) * op->extent);
  }

  // The persistent tile loop (gpu_persistent_blocks) around the loops being
  // visited, if any.
  const For *tiles_loop_ = nullptr;
  // Left by a staging loop inside tiles_loop_ whose TMA pipeline runs
  // across the block's tiles, for the tile loop to place around itself:
  // the pipeline's parts, the statement standing for it in the tile's body
  // (`per_tile`), and the tiles to allocate.
  struct AcrossTiles {
    TmaPipelineAcrossTiles parts;
    Stmt per_tile;
    std::vector<StagedTile> tiles;
    int stages = 0;
  };
  std::optional<AcrossTiles> across_;

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->role == LoopRole::PersistentTiles)
      return visit_tiles(op, self);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const TmaStaging *mark, const Stmt &self) override {
    const auto *op = mark->loop.as<For>();
    if (op->name != site_.loop)
      return IRMutator::visit(mark, self);
    found = true;
    ScanBody scan;
    scan.visit_stmt(op->body);
    std::vector<StagedTile> tiles = plan_tiles(op, scan);
    const int stages = tile_buffers(tiles.front().copies);
    Expr loop_var = Variable::make(Int(32), op->name);
    Stmt body = read_from_tiles(op->body, tiles, scan, simplify((loop_var - op->min) % stages));
    Expr steps_before = steps_before_tile(op, tiles);
    if (!steps_before.defined())
      return allocate_tiles(tiles, stages,
                            tma_pipeline(tma_request(op, scan, tiles, stages, body, mark->fallback, Expr())));
    // Across the tiles: the TMA steps read the slots of the block's run,
    // the cp.async ones (a pipeline per tile) their own.
    Stmt run_body = read_from_tiles(op->body, tiles, scan, simplify((steps_before + loop_var - op->min) % stages));
    TmaPipelineAcrossTiles parts =
        tma_pipeline_across_tiles(tma_request(op, scan, tiles, stages, run_body, mark->fallback, steps_before));
    Stmt per_tile = parts.describable.defined()
                        ? IfThenElse::make(parts.describable, parts.per_tile, parts.fallback_per_tile)
                        : parts.per_tile;
    across_ = AcrossTiles{parts, per_tile, tiles, stages};
    return per_tile;
  }

  // The TMA form of the pipeline (StageWithTma.h), with `fallback` where
  // the TMA cannot describe an input.
  TmaPipeline tma_request(const For *op, const ScanBody &scan, const std::vector<StagedTile> &tiles, int stages,
                          const Stmt &body, const Stmt &fallback, const Expr &steps_before) {
    TmaPipeline p;
    p.steps_before = steps_before;
    if (steps_before.defined())
      p.run_steps = simplify(tiles_loop_->extent * op->extent);
    p.loop = op;
    p.stage = site_.stage;
    p.body = body;
    p.stages = stages;
    p.mma_groups_in_flight = mma_groups_in_flight(site_.warpgroup_mma(), stages);
    for (const std::string &name : scan.thread_loops) {
      const LoopInfo &loop = scan.loops.at(name);
      p.threads.push_back(BlockThreadLoop{name, loop.min, loop.extent, loop.gpu_dim});
    }
    p.barriers = tma_barrier_name(tiles.front().input->name);
    const TmaCopies &tma = *tma_copies(tiles.front().copies);
    p.producer_warps = tma.producer ? tma.producer->warps : 0;
    p.producer_registers = tma.producer ? tma.producer->registers : 0;
    p.empty_barriers = tma_empty_barrier_name(tiles.front().input->name);
    p.fallback = fallback;
    for (const StagedTile &staged : tiles) {
      TmaTile tile;
      tile.input = staged.input;
      tile.buffer = staged.buffer;
      tile.origin = staged.region.min;
      tile.extent = staged.region.extent;
      tile.shared_indices = [staged](const std::vector<Expr> &coords, const Expr &slot) {
        return shared_indices(staged, coords, slot);
      };
      tile.source = staged.input->name;
      tile.value = [staged](const std::vector<Expr> &coords, const std::map<std::string, Expr> &shift) {
        return source_value(staged, coords, shift);
      };
      const TmaCopies &staged_tma = *tma_copies(staged.copies);
      if (staged_tma.multicast)
        tile.multicast = multicast_blocks(staged);
      if (std::optional<TmaInputCopy> made = find_tma_input_copy(env_, staged.input->name)) {
        const TmaInputCopy &copy = *made;
        // The copy is what the tile needs: stored the way the MMA reads it
        // (K-major for tf32's B), rounded where the MMA rounds.
        COALESCE_INTERNAL_ASSERT(copy.transposed == staged.swizzled_transposed() &&
                                     copy.round_to_tf32 == staged.round_to_tf32,
                                 "the TMA's copy of '", staged.input->name, "' is not laid out as its tile");
        tile.source = tma_padded_name(staged.input->name);
        tile.padded = true;
        if (copy.only_where_ragged)
          tile.input_value = tile.value;
        if (copy.transposed) {
          // The boxes are the copy's: rows along n, columns along k.
          std::reverse(tile.origin.begin(), tile.origin.end());
          std::reverse(tile.extent.begin(), tile.extent.end());
        }
        auto input_order = [transposed = copy.transposed](std::vector<Expr> coords) {
          if (transposed)
            std::reverse(coords.begin(), coords.end());
          return coords;
        };
        tile.shared_indices = [staged, input_order](const std::vector<Expr> &coords, const Expr &slot) {
          return shared_indices(staged, input_order(coords), slot);
        };
        tile.value = [staged, copy, input_order](const std::vector<Expr> &coords,
                                                 const std::map<std::string, Expr> &shift) {
          return padded_source_value(staged, copy, input_order(coords), shift);
        };
      }
      check_tma_box_start(staged, tile);
      p.tiles.push_back(std::move(tile));
    }
    return p;
  }

  // The TMA faults (an illegal instruction, which loses the context) on a
  // box whose first element along the source's contiguous dimension is not
  // at a 16-byte multiple: measured on the H200, a bf16 reduction
  // RDom(2, K - 2) copied from column 2 + 64 ko trapped, RDom(8, K - 8)
  // ran. Refused here, with the Func and the loop, where the cp.async
  // copies would have taken it; verify_tensor_copies checks the result.
  void check_tma_box_start(const StagedTile &staged, const TmaTile &tile) const {
    const int per_16_bytes = 16 / staged.input->type.bytes();
    const Expr start = simplify(tile.origin.back());
    if (provably_multiple_of(start, per_16_bytes))
      return;
    user_error("in schedule for ", site_.stage, ": '", staged.input->name, "' is staged with TmaCopies, whose ",
               "copies must start each row at a multiple of 16 bytes (", per_16_bytes, " ", staged.input->type,
               " elements) along the contiguous dimension of '", tile.source, "', but the tile staged at '",
               loop_short_name(site_.loop), "' starts at ", with_short_loop_names(start),
               ", which is not provably one (a reduction starting at a column that is not a multiple of ", per_16_bytes,
               "?): start the reduction at a multiple of ", per_16_bytes, ", or stage it with AsyncCopies");
  }

  // The blocks of a cluster that share `staged`'s tile (TmaCopies::
  // multicast): all of the output's cluster, which is legal only where the
  // tile is the same for each of them, so where its first element does
  // not depend on the clustered block loop.
  int multicast_blocks(const StagedTile &staged) const {
    const FuncSchedule &output = env_.output().schedule;
    COALESCE_INTERNAL_ASSERT(output.cluster_blocks > 1, "a multicast tile without clusters");
    std::string cluster_loop = cluster_loop_name(env_.output());
    for (size_t d = 0; d < staged.region.min.size(); ++d)
      if (expr_uses_var(staged.region.min[d], cluster_loop))
        user_error("in schedule for ", site_.stage, ": '", staged.input->name,
                   "' is staged with TmaCopies::multicast, "
                   "but its tile starts at ",
                   readable(staged.region.min[d]), " in dimension ", d,
                   ", which depends "
                   "on '",
                   output.cluster_var,
                   "', along which the blocks of a cluster lie (gpu_cluster), so each "
                   "block needs a tile of its own; multicast an input whose tile does not depend on '",
                   output.cluster_var, "', or cluster the blocks along another block loop");
    return output.cluster_blocks;
  }
};

} // namespace

Stmt lower_tma_pipelines(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const StagingLoop &at : staging_loops(s, env)) {
    if (!tma_copies(at.requests.front().copies))
      continue;
    LowerAtLoop pass(staging_site(at), at.requests, env);
    result = pass.mutate(result);
    COALESCE_INTERNAL_ASSERT(pass.found, "no TMA staging of loop '", at.loop, "'");
  }
  return merge_sibling_allocations(result);
}

} // namespace coalesce
