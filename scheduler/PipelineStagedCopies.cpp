#include "scheduler/PipelineStagedCopies.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"
#include "scheduler/StagedTile.h"
#include "scheduler/StagedTileRegion.h"
#include "scheduler/StagingLoops.h"
#include "scheduler/Substitute.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace coalesce {

namespace {

using namespace staging;

class PipelineAtLoop : public StagingSiteMutator {
public:
  using StagingSiteMutator::StagingSiteMutator;

private:
  using IRMutator::visit;

  Stmt visit(const PipelinedStaging *mark, const Stmt &mark_self) override {
    const auto *op = mark->loop.as<For>();
    if (op->name != site_.loop)
      return IRMutator::visit(mark, mark_self);
    found = true;
    const Stmt &self = mark->loop;
    ScanBody scan;
    scan.visit_stmt(op->body);
    std::vector<StagedTile> tiles = plan_tiles(op, scan);
    // check_staging made every input here name the same pipeline, and
    // stage_inputs_in_shared left only those of two buffers or more.
    const TileCopies &shared_copies = tiles.front().copies;
    if (op->for_kind != ForKind::Serial)
      user_error("in schedule for ", site_.stage, ": double-buffered staging at '", loop_short_name(site_.loop),
                 "', which is ", for_kind_name(op->for_kind), "; double buffering needs a serial loop");
    int stages = tile_buffers(shared_copies);
    COALESCE_INTERNAL_ASSERT(stages > 1, "a pipelined staging of one buffer at '", loop_short_name(site_.loop), "'");
    if (stages > 2)
      return pipeline(op, self, scan, tiles, stages);

    // Two buffers: the first tile before the loop, the next one fetched
    // while this one is read.
    Expr loop_var = Variable::make(Int(32), op->name);
    Expr which = simplify((loop_var - op->min) % 2);
    Expr next_which = simplify((loop_var - op->min + 1) % 2);
    Stmt body = read_from_tiles(op->body, tiles, scan, which);
    std::vector<Stmt> prologue, fetches, stores;
    for (const StagedTile &tile : tiles) {
      std::string prefix = tile.buffer + ".";
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
        fetches.push_back(async_tile_copy(tile, scan, prefix + "next.", next, next_which, zero_fill_tests()));
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
    // Fetch the next tile while this one is used; store it after; one
    // barrier makes it visible (the other buffer was last read before the
    // previous iteration's barrier).
    Stmt wait = Evaluate::make(Call::make_intrinsic(Intrinsic::AsyncWait, Int(32), {}));
    Stmt rounded_next = round_landed_tiles(tiles, scan, "round_next", next_which, false);
    Stmt new_body = Block::make({IfThenElse::make(has_next, Block::make(fetches)), body,
                                 stores.empty() ? Stmt() : IfThenElse::make(has_next, Block::make(stores)), wait,
                                 rounded_next.defined() ? IfThenElse::make(has_next, rounded_next) : Stmt(),
                                 publish_fence(tiles), Barrier::make()});
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
      std::vector<Expr> extents = {2};
      for (int64_t e : tile.shared_extents)
        extents.push_back(static_cast<int>(e));
      result = Allocate::make(tile.buffer, tile.input->type, MemoryType::Shared, extents, result, tile.input->name);
    }
    return result;
  }

  ZeroFillTests zero_fill_tests() const {
    return site_.mma_kind == MmaKind::None ? ZeroFillTests::TilesAtInputEnds : ZeroFillTests::EveryTile;
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
      copies.push_back(async_tile_copy(tile, scan, tile.buffer + "." + name + ".", shift, slot, zero_fill_tests()));
    return Block::make(copies);
  }

  // A software pipeline of `stages` slots per input: before the loop, the
  // first stages - 1 tiles are requested; each iteration waits for its own
  // tile (this thread's copies, then a barrier for everyone's), requests the
  // tile stages - 1 ahead into the slot the previous iteration read (free:
  // every thread is past the barrier, so done with it), and computes. Each
  // request is one commit group, empty past the end, so that "all but the
  // newest stages - 2 groups are complete" always means "this tile is here".
  Stmt pipeline(const For *op, const Stmt &self, const ScanBody &scan, const std::vector<StagedTile> &tiles,
                int stages) {
    if (op->for_kind != ForKind::Serial)
      user_error("in schedule for ", site_.stage, ": pipelined staging at '", loop_short_name(site_.loop),
                 "', which is ", for_kind_name(op->for_kind), "; a pipeline needs a serial loop");
    Expr loop_var = Variable::make(Int(32), op->name);
    Expr end = op->min + op->extent;
    Expr which = simplify((loop_var - op->min) % stages);
    Stmt body = read_from_tiles(op->body, tiles, scan, which);
    auto intrinsic = [](Intrinsic which, std::vector<Expr> args = {}) {
      return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
    };
    // Tiles requested ahead of the one in use: every slot but this one, and
    // but the previous one while warpgroup MMAs may still be reading it
    // (they complete one k step later, see mma_groups_in_flight).
    int ahead_tiles = stages - 1 - mma_groups_in_flight(site_.warpgroup_mma(), stages);
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
    // The TMA's form is lower_tma_pipelines' to build, from the loop as
    // it is here; this cp.async pipeline is its fallback.
    return TmaStaging::make(self, result);
  }
};

} // namespace

Stmt pipeline_staged_copies(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const StagingLoop &at : staging_loops(s, env)) {
    if (tile_buffers(at.requests.front().copies) == 1)
      continue; // staged by stage_inputs_in_shared, one buffer
    PipelineAtLoop pass(staging_site(at), at.requests, env);
    result = pass.mutate(result);
    COALESCE_INTERNAL_ASSERT(pass.found, "no pipelined staging of loop '", at.loop, "'");
  }
  return merge_sibling_allocations(result);
}

} // namespace coalesce
