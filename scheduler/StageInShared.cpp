#include "scheduler/StageInShared.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"
#include "scheduler/StageWithTma.h"
#include "scheduler/StagedTile.h"
#include "scheduler/StagedTileRegion.h"
#include "scheduler/StagingLoops.h"
#include "scheduler/Substitute.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace coalesce {

namespace {

using namespace staging;

// An expression as the user wrote its names: "acc.s1.ko" reads "ko".
std::string readable(const Expr &e) {
  static const std::regex qualifier("[A-Za-z_][A-Za-z0-9_]*\\.s[0-9]+\\.");
  return std::regex_replace(to_string(e), qualifier, "");
}

class StageAtLoop : public IRMutator {
public:
  StageAtLoop(const std::string &loop, std::vector<SharedStaging> requests, const Environment &env,
              const std::string &stage, MmaKind mma_kind, std::vector<MmaOperands> mma_operands)
      : loop_(loop), requests_(std::move(requests)), env_(env), stage_(stage), mma_kind_(mma_kind),
        warpgroup_mma_(is_warpgroup_mma(mma_kind)), mma_operands_(std::move(mma_operands)) {}
  bool found = false;

private:
  using IRMutator::visit;
  const std::string loop_; // a copy: a caller may pass a temporary, and a reference would dangle
  std::vector<SharedStaging> requests_;
  const Environment &env_;
  const std::string stage_;  // a copy: a caller may pass a temporary, and a reference would dangle
  const MmaKind mma_kind_;   // the instruction of the stage's reduction (None: no MMA)
  const bool warpgroup_mma_; // the stage's reduction runs on warpgroup MMAs, which read these tiles
  // The MMA operands of the stage, or of each fused reduction staging here
  // (warpgroup MMAs only; else none).
  const std::vector<MmaOperands> mma_operands_;

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

  // `s` inside the allocations of the tiles' shared buffers.
  static Stmt allocate_tiles(const std::vector<StagedTile> &tiles, int stages, Stmt s) {
    for (const StagedTile &tile : tiles) {
      std::vector<Expr> extents = {Expr(stages)};
      for (int64_t e : tile.shared_extents)
        extents.push_back(static_cast<int>(e));
      s = Allocate::make(tile.buffer, tile.input->type, MemoryType::Shared, extents, s, tile.input->name);
    }
    return s;
  }

  StagedTile plan_tile(const SharedStaging &request, const For *op, const ScanBody &scan) {
    StagedTile tile;
    tile.input = env_.inputs.at(request.input).get();
    tile.layout = request.layout;
    tile.copies = request.copies;
    tile.buffer = staging_buffer_name(request.input);
    FindCalls finder(request.input, scan.lets, scan.ambiguous);
    finder.visit_stmt(op->body);
    std::string short_loop = loop_short_name(loop_);
    if (!finder.ambiguous_name.empty())
      user_error("in schedule for ", stage_, ": cannot stage '", request.input, "' in shared memory at '", short_loop,
                 "': its coordinates depend on '", loop_short_name(finder.ambiguous_name),
                 "', which names loops or values of different ranges inside '", short_loop,
                 "' (a split whose factor does not divide the loop, with bounds known only at run time); split by a "
                 "factor that divides it");

    for (size_t d = 0; d < tile.input->extents.size(); ++d) {
      Expr base;
      int64_t extent = 0;
      for (const auto &call : finder.calls) {
        Expr call_base;
        int64_t call_extent;
        if (!affine_span(call[d], scan.loops, &call_base, &call_extent))
          user_error("in schedule for ", stage_, ": cannot stage '", request.input, "' in shared memory at '",
                     short_loop, "': its coordinate ", readable(call[d]),
                     " is not an affine function of the loops inside '", short_loop, "' with constant coefficients");
        if (base.defined() && !is_const(simplify(base - call_base), 0))
          user_error("in schedule for ", stage_, ": cannot stage '", request.input, "' in shared memory at '",
                     short_loop, "': it is read at tiles that start at different places (", readable(base), " and ",
                     readable(call_base), ")");
        base = call_base;
        extent = std::max(extent, call_extent);
      }
      tile.region.min.push_back(base);
      tile.region.extent.push_back(extent);
      tile.elements *= extent;
    }
    for (size_t d = 0; d < tile.input->extents.size(); ++d)
      tile.order.push_back(static_cast<int>(d));
    if (tile.layout.transposed)
      std::swap(tile.order[0], tile.order[1]);
    for (int d : tile.order)
      tile.shared_extents.push_back(tile.region.extent[d]);
    tile.shared_extents.back() += tile.layout.padding;
    if (warpgroup_mma_) {
      // check_mma made sure the tile can be swizzled: 2-D, of the
      // instruction's operand type (16-bit, f32 for tf32, 8-bit), rows of whole atoms, no padding or transposition. A B
      // that the instruction reads K-major but that is stored K x N is
      // stored transposed: its rows run along n. An N x K one (W(j, k))
      // is staged as it lies, K-major, like A.
      const std::vector<int64_t> &extent = tile.region.extent;
      tile.swizzled = true;
      bool transposed = std::any_of(mma_operands_.begin(), mma_operands_.end(), [&](const MmaOperands &operands) {
        return mma_staged_transposed(mma_kind_, operands, request.input);
      });
      const int first = static_cast<int>(extent.size()) - 2;
      tile.swizzle_row_dim = first + (transposed ? 1 : 0);
      tile.swizzle_column_dim = first + (transposed ? 0 : 1);
      tile.round_to_tf32 = mma_rounds_to_tf32(mma_kind_);
      int bytes = tile.input->type.bytes(), rows = tile.swizzle_row_dim, columns = tile.swizzle_column_dim;
      bool batch_of_one = first >= 0 && std::all_of(extent.begin(), extent.begin() + std::max(first, 0),
                                                    [](int64_t e) { return e == 1; });
      COALESCE_INTERNAL_ASSERT(batch_of_one && bytes == mma_instruction(mma_kind_).operand.bytes() &&
                                   extent[columns] % tile.swizzle_row() == 0 && extent[rows] % 8 == 0 &&
                                   !tile.layout.padding && !tile.layout.transposed,
                               "tile of '", request.input, "' cannot be swizzled for a warpgroup MMA");
      tile.shared_extents = {extent[columns] / tile.swizzle_row(), extent[rows], tile.swizzle_row()};
    }
    return tile;
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
    if (op->name != loop_)
      return IRMutator::visit(op, self);
    found = true;
    ScanBody scan;
    scan.visit_stmt(op->body);
    std::vector<StagedTile> tiles;
    for (const SharedStaging &request : requests_)
      tiles.push_back(plan_tile(request, op, scan));
    // check_staging made every input here name the same pipeline.
    const TileCopies &shared_copies = tiles.front().copies;
    bool double_buffered = tile_buffers(shared_copies) > 1;
    if (double_buffered && op->for_kind != ForKind::Serial)
      user_error("in schedule for ", stage_, ": double-buffered staging at '", loop_short_name(loop_), "', which is ",
                 for_kind_name(op->for_kind), "; double buffering needs a serial loop");

    int stages = tile_buffers(shared_copies);
    for (const StagedTile &tile : tiles)
      COALESCE_INTERNAL_ASSERT(same_pipeline(tile.copies, shared_copies), "the inputs staged at '",
                               loop_short_name(loop_), "' name different pipelines");
    if (stages > 2)
      return pipeline(op, scan, tiles, stages);

    Expr loop_var = Variable::make(Int(32), op->name);
    Expr which = simplify((loop_var - op->min) % 2);
    Expr next_which = simplify((loop_var - op->min + 1) % 2);
    Stmt body = op->body;
    for (const StagedTile &tile : tiles) {
      ReplaceCalls replace(tile.input->name, tile.buffer, tile.region, scan.lets);
      body = replace.mutate(body);
      // The replaced loads index in input order: permute, add the selector.
      body = PermuteLoads(tile, which).mutate(body);
    }
    std::vector<Stmt> prologue, fetches, stores, copies;
    for (const StagedTile &tile : tiles) {
      std::string prefix = tile.buffer + ".";
      if (!double_buffered) {
        copies.push_back(per_thread_copy(tile, scan, prefix, [&](const std::vector<Expr> &c, const Expr &) {
          return Store::make(tile.buffer, shared_indices(tile, c, which),
                             stored_value(tile, source_value(tile, c, {})));
        }));
        continue;
      }
      std::map<std::string, Expr> first = {{op->name, op->min}}, next = {{op->name, loop_var + 1}};
      prologue.push_back(per_thread_copy(tile, scan, prefix + "first.", [&](const std::vector<Expr> &c, const Expr &) {
        if (std::holds_alternative<RegisterDoubleBuffer>(tile.copies))
          return Store::make(tile.buffer, shared_indices(tile, c, 0), stored_value(tile, source_value(tile, c, first)));
        // The first tile is copied before the loop, whatever its trip
        // count: at K = 0 an input may be empty, where even the clamped
        // element does not exist. An asynchronous copy with a predicate
        // reads nothing when it is false (it writes 0), so the copy needs
        // no branch around it, which would change the kernel's code.
        Expr source = first_tile_source(tile, c, first);
        const auto *copy = source.as<Call>();
        if (tile.input->type.bytes() == 4 || copy->args.size() < 2)
          return Store::make(tile.buffer, shared_indices(tile, c, 0), source);
        // A 2-byte element has no predicated asynchronous copy on the GPU
        // (its copy selects after reading): branch around the read.
        Expr zero = Cast::make(tile.input->type, Expr(0.0f));
        return IfThenElse::make(
            copy->args[1],
            Store::make(tile.buffer, shared_indices(tile, c, 0),
                        Call::make_intrinsic(Intrinsic::AsyncLoad, tile.input->type, {copy->args[0]})),
            Store::make(tile.buffer, shared_indices(tile, c, 0), zero));
      }));
      if (!std::holds_alternative<RegisterDoubleBuffer>(tile.copies)) {
        // Straight into the other buffer: it was last read before the
        // previous iteration's barrier.
        fetches.push_back(async_tile_copy(tile, scan, prefix + "next.", next, next_which));
        continue;
      }
      std::string fetch = fetch_buffer_name(tile.input->name);
      fetches.push_back(per_thread_copy(tile, scan, prefix + "fetch.", [&](const std::vector<Expr> &c, const Expr &e) {
        return Store::make(fetch, fetch_indices(scan, prefix + "fetch.", e), source_value(tile, c, next));
      }));
      stores.push_back(per_thread_copy(tile, scan, prefix + "store.", [&](const std::vector<Expr> &c, const Expr &e) {
        return Store::make(
            tile.buffer, shared_indices(tile, c, next_which),
            stored_value(tile, Load::make(tile.input->type, fetch, fetch_indices(scan, prefix + "store.", e))));
      }));
    }
    Expr has_next = loop_var + 1 < op->min + op->extent;
    Stmt new_body;
    if (double_buffered) {
      // Fetch the next tile while this one is used; store it after; one
      // barrier makes it visible (the other buffer was last read before the
      // previous iteration's barrier).
      Stmt wait = Evaluate::make(Call::make_intrinsic(Intrinsic::AsyncWait, Int(32), {}));
      Stmt rounded_next = round_landed_tiles(tiles, scan, "round_next", next_which, false);
      new_body = Block::make(
          {copies.empty() ? Stmt() : Block::make({Block::make(copies), publish_fence(tiles), Barrier::make()}),
           IfThenElse::make(has_next, Block::make(fetches)), body,
           stores.empty() ? Stmt() : IfThenElse::make(has_next, Block::make(stores)), wait,
           rounded_next.defined() ? IfThenElse::make(has_next, rounded_next) : Stmt(), publish_fence(tiles),
           Barrier::make()});
    } else {
      new_body = Block::make({Block::make(copies), publish_fence(tiles), Barrier::make(), body, Barrier::make()});
    }
    Stmt result =
        For::make(op->name, op->min, op->extent, op->for_kind, new_body, op->gpu_dim, op->reduction_of, op->role);
    // The first tile is copied before the loop, unconditionally up to here:
    // at K = 0 the inputs may be empty, and even a clamped read of an empty
    // input (index extent - 1 = -1) is outside it. So the copy, its barrier
    // and the loop run only when every staged input has elements. Skipping
    // the loop then skips nothing: an input may be empty only where every
    // definition reading it has an empty reduction range (bind_arguments),
    // and this loop holds only its own stage's work, which reads it. The
    // condition is uniform, so every thread meets the barrier or none does.
    // (Measured with ptxas: this form leaves the default 128x128 GEMM kernel
    // without spills on sm_80 and sm_90a; a branch around the copy alone, or
    // on the loop's extent, spilled 8 to 24 bytes.)
    bool async_prologue = std::all_of(tiles.begin(), tiles.end(), [](const StagedTile &t) {
      return !std::holds_alternative<RegisterDoubleBuffer>(t.copies);
    });
    if (!prologue.empty() && async_prologue) {
      // The predicated copies of the first tile land before the barrier.
      Stmt wait = Evaluate::make(Call::make_intrinsic(Intrinsic::AsyncWait, Int(32), {}));
      result = Block::make({Block::make(prologue), wait,
                            round_landed_tiles(tiles, scan, "round_first", 0, false, /*elements_only=*/true),
                            publish_fence(tiles), Barrier::make(), result});
    } else if (!prologue.empty()) {
      Expr inputs_have_elements;
      std::vector<Expr> seen; // A and B share K: test it once
      for (const StagedTile &tile : tiles)
        for (const Expr &extent : tile.input->extents)
          if (!as_const_int(extent) &&
              std::none_of(seen.begin(), seen.end(), [&](const Expr &e) { return equal(e, extent); })) {
            seen.push_back(extent);
            Expr positive = 0 < extent;
            inputs_have_elements = inputs_have_elements.defined() ? (inputs_have_elements && positive) : positive;
          }
      result = Block::make({Block::make(prologue), publish_fence(tiles), Barrier::make(), result});
      if (inputs_have_elements.defined())
        result = IfThenElse::make(simplify(inputs_have_elements), result);
    }
    for (const StagedTile &tile : tiles) {
      if (std::holds_alternative<RegisterDoubleBuffer>(tile.copies)) {
        std::vector<Expr> fetch_extents;
        for (const std::string &name : scan.thread_loops)
          fetch_extents.push_back(scan.loops.at(name).extent);
        fetch_extents.push_back(static_cast<int>(elements_per_thread(tile, scan)));
        result = Allocate::make(fetch_buffer_name(tile.input->name), tile.input->type, MemoryType::Register,
                                fetch_extents, result, tile.input->name);
      }
      std::vector<Expr> extents;
      if (double_buffered)
        extents.push_back(2);
      for (int64_t e : tile.shared_extents)
        extents.push_back(static_cast<int>(e));
      result = Allocate::make(tile.buffer, tile.input->type, MemoryType::Shared, extents, result, tile.input->name);
    }
    return result;
  }

  // The asynchronous copies of tile `at` (the staging loop's value) of every
  // input into its slot: 16-byte copies where the input's rows are whole
  // vectors, element copies otherwise.
  Stmt issue_copies(const std::vector<StagedTile> &tiles, const ScanBody &scan, const For *op, const Expr &at,
                    const std::string &name, int stages) {
    std::map<std::string, Expr> shift = {{op->name, at}};
    Expr slot = simplify((at - op->min) % stages);
    std::vector<Stmt> copies;
    for (const StagedTile &tile : tiles)
      copies.push_back(async_tile_copy(tile, scan, tile.buffer + "." + name + ".", shift, slot));
    return Block::make(copies);
  }

  // A software pipeline of `stages` slots per input: before the loop, the
  // first stages - 1 tiles are requested; each iteration waits for its own
  // tile (this thread's copies, then a barrier for everyone's), requests the
  // tile stages - 1 ahead into the slot the previous iteration read (free:
  // every thread is past the barrier, so done with it), and computes. Each
  // request is one commit group, empty past the end, so that "all but the
  // newest stages - 2 groups are complete" always means "this tile is here".
  Stmt pipeline(const For *op, const ScanBody &scan, const std::vector<StagedTile> &tiles, int stages) {
    if (op->for_kind != ForKind::Serial)
      user_error("in schedule for ", stage_, ": pipelined staging at '", loop_short_name(loop_), "', which is ",
                 for_kind_name(op->for_kind), "; a pipeline needs a serial loop");
    Expr loop_var = Variable::make(Int(32), op->name);
    Expr end = op->min + op->extent;
    // The loop's body reading the tiles from slot `slot` of their buffers.
    auto body_reading = [&](const Expr &slot) {
      Stmt body = op->body;
      for (const StagedTile &tile : tiles) {
        ReplaceCalls replace(tile.input->name, tile.buffer, tile.region, scan.lets);
        body = PermuteLoads(tile, slot).mutate(replace.mutate(body));
      }
      return body;
    };
    Expr which = simplify((loop_var - op->min) % stages);
    Stmt body = body_reading(which);
    auto intrinsic = [](Intrinsic which, std::vector<Expr> args = {}) {
      return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
    };
    // Tiles requested ahead of the one in use: every slot but this one, and
    // but the previous one while warpgroup MMAs may still be reading it
    // (they complete one k step later, see mma_groups_in_flight).
    int ahead_tiles = stages - 1 - mma_groups_in_flight(warpgroup_mma_, stages);
    std::vector<Stmt> prologue;
    for (int s = 0; s < ahead_tiles; ++s) {
      Expr at = simplify(op->min + s);
      prologue.push_back(IfThenElse::make(at < end, issue_copies(tiles, scan, op, at, str_cat("first", s), stages)));
      prologue.push_back(intrinsic(Intrinsic::AsyncCommit));
    }
    Expr ahead = simplify(loop_var + ahead_tiles);
    Stmt step =
        Block::make({intrinsic(Intrinsic::AsyncWaitGroup, {Expr(ahead_tiles - 1)}),
                     round_landed_tiles(tiles, scan, "round", which, true), publish_fence(tiles), Barrier::make(),
                     IfThenElse::make(ahead < end, issue_copies(tiles, scan, op, ahead, "next", stages)),
                     intrinsic(Intrinsic::AsyncCommit), body});
    Stmt loop = For::make(op->name, op->min, op->extent, op->for_kind, step, op->gpu_dim, op->reduction_of, op->role);
    if (ahead_tiles < stages - 1) {
      // Warpgroup MMAs left in flight across the back edge: the first step
      // runs before the loop, so that the loop's head is reached only with
      // the accumulators defined by MMAs. (Reached also from their
      // initialization, ptxas serializes every MMA: C7515.)
      Stmt first = substitute({{op->name, op->min}}, step);
      loop = IfThenElse::make(
          0 < op->extent, Block::make({first, For::make(op->name, simplify(op->min + 1), simplify(op->extent - 1),
                                                        op->for_kind, step, op->gpu_dim, op->reduction_of, op->role)}));
    }
    Stmt result = Block::make({Block::make(prologue), loop,
                               // Nothing is left in flight after the loop
                               // but empty groups; the barrier keeps the
                               // next use of the buffers after every read.
                               intrinsic(Intrinsic::AsyncWaitGroup, {Expr(0)}), Barrier::make()});
    if (!tma_copies(tiles.front().copies))
      return allocate_tiles(tiles, stages, result);
    Expr steps_before = steps_before_tile(op, tiles);
    if (!steps_before.defined())
      return allocate_tiles(tiles, stages, tma_pipeline(tma_request(op, scan, tiles, stages, body, result, Expr())));
    // Across the tiles: the TMA steps read the slots of the block's run,
    // the cp.async ones (a pipeline per tile) their own.
    Stmt run_body = body_reading(simplify((steps_before + loop_var - op->min) % stages));
    TmaPipelineAcrossTiles parts =
        tma_pipeline_across_tiles(tma_request(op, scan, tiles, stages, run_body, result, steps_before));
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
    p.loop = op;
    p.stage = stage_;
    p.body = body;
    p.stages = stages;
    p.mma_groups_in_flight = mma_groups_in_flight(warpgroup_mma_, stages);
    for (const std::string &name : scan.thread_loops) {
      const LoopInfo &loop = scan.loops.at(name);
      p.threads.push_back(BlockThreadLoop{name, loop.min, loop.extent, loop.gpu_dim});
    }
    p.barriers = tma_barrier_name(tiles.front().input->name);
    const TmaCopies &tma = *tma_copies(tiles.front().copies);
    p.producer_warps = tma.producer ? tma.producer->warps : 0;
    p.producer_registers = tma.producer ? tma.producer->registers : 0;
    p.blocks_per_sm = env_.output().schedule.min_blocks_per_sm;
    if (p.producer_registers > 0) {
      // What the pipeline cannot reallocate around (the count the MMA
      // warps take, and its own rule, are the pipeline's: StageWithTma.cpp).
      const std::string refused =
          str_cat("in schedule for ", stage_, ": the TMA copies staged at '", loop_short_name(op->name),
                  "' reallocate registers "
                  "(ProducerWarps::registers), ");
      if (env_.output().schedule.split_k.requested())
        user_error(refused,
                   "so the producer warps leave the kernel after their copies, but split_k's last block "
                   "combines the slices behind barriers of the whole block; reallocate no registers with split_k");
      if (env_.output().schedule.persistent_blocks > 0 && !steps_before.defined())
        user_error(refused,
                   "so the producer warps leave the kernel after their copies, but on this persistent grid "
                   "(gpu_persistent_blocks) the pipeline cannot run across the block's tiles (the bounds of '",
                   loop_short_name(op->name),
                   "' depend on the tile, not only on parameters), and the block's next "
                   "tile needs them again; reallocate no registers, or a reduction whose bounds are the same "
                   "for every tile");
      if (p.blocks_per_sm < 1)
        user_error(refused, "which needs the launch's registers per thread known: set gpu_min_blocks_per_sm on '",
                   env_.output().name, "'");
    }
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
      if (staged_tma.padded_copy) {
        TmaInputCopy copy = tma_input_copy(env_, staged.input->name);
        // The copy is what the tile needs: stored the way the MMA reads it
        // (K-major for tf32's B), rounded where the MMA rounds.
        COALESCE_INTERNAL_ASSERT(copy.transposed == staged.swizzled_transposed() &&
                                     copy.round_to_tf32 == staged.round_to_tf32,
                                 "the TMA's copy of '", staged.input->name, "' is not laid out as its tile");
        tile.source = tma_padded_name(staged.input->name);
        tile.padded = true;
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
    user_error("in schedule for ", stage_, ": '", staged.input->name, "' is staged with TmaCopies, whose ",
               "copies must start each row at a multiple of 16 bytes (", per_16_bytes, " ", staged.input->type,
               " elements) along the contiguous dimension of '", tile.source, "', but the tile staged at '",
               loop_short_name(loop_), "' starts at ", with_short_loop_names(start),
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
        user_error("in schedule for ", stage_, ": '", staged.input->name,
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

  // Loads of a staged buffer come out of ReplaceCalls in input order.
  class PermuteLoads : public IRMutator {
  public:
    PermuteLoads(const StagedTile &tile, const Expr &which) : tile_(tile), which_(which) {}

  private:
    using IRMutator::visit;
    Expr visit(const Load *op, const Expr &self) override {
      if (op->buffer != tile_.buffer)
        return IRMutator::visit(op, self);
      return Load::make(op->type, op->buffer, shared_indices(tile_, op->indices, which_));
    }
    const StagedTile &tile_;
    const Expr &which_;
  };
};

// A reduction loop split into steady state and tail is staged twice; its
// two copies share one set of buffers.
class MergeSiblingAllocations : public IRMutator {
  using IRMutator::visit;
  static bool same(const Allocate *a, const Allocate *b) {
    if (a->name != b->name || a->type != b->type || a->memory != b->memory || a->extents.size() != b->extents.size())
      return false;
    for (size_t d = 0; d < a->extents.size(); ++d)
      if (!equal(a->extents[d], b->extents[d]))
        return false;
    return true;
  }
  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> merged;
    for (const Stmt &s : op->stmts) {
      const Allocate *previous = merged.empty() ? nullptr : merged.back().as<Allocate>();
      const Allocate *current = s.as<Allocate>();
      if (previous && current && same(previous, current)) {
        merged.back() = Allocate::make(previous->name, previous->type, previous->memory, previous->extents,
                                       Block::make({previous->body, current->body}), previous->staged_input);
        continue;
      }
      merged.push_back(s);
    }
    std::vector<Stmt> result;
    for (const Stmt &s : merged)
      result.push_back(mutate(s));
    return Block::make(result);
  }
};

} // namespace

Stmt stage_inputs_in_shared(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const StagingLoop &at : staging_loops(s, env)) {
    const FuncContents &func = *at.func;
    MmaKind kind = func.schedule.stages[at.stage].mma.kind;
    std::vector<MmaOperands> operands;
    if (is_warpgroup_mma(kind)) {
      operands.push_back(mma_operands(func, at.stage));
      for (const FuncContents *other : at.fused)
        operands.push_back(mma_operands(*other, at.stage));
    }
    StageAtLoop pass(at.loop, at.requests, env, stage_description(func, at.stage), kind, operands);
    result = pass.mutate(result);
    COALESCE_INTERNAL_ASSERT(pass.found, "staging loop '", at.loop, "' not found");
  }
  return MergeSiblingAllocations().mutate(result);
}

} // namespace coalesce
