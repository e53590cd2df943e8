#include "scheduler/StageInShared.h"

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

class StageAtLoop : public StagingSiteMutator {
public:
  using StagingSiteMutator::StagingSiteMutator;

private:
  using IRMutator::visit;

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->name != site_.loop)
      return IRMutator::visit(op, self);
    found = true;
    ScanBody scan;
    scan.visit_stmt(op->body);
    std::vector<StagedTile> tiles = plan_tiles(op, scan);
    // check_staging made every input here name the same pipeline.
    const TileCopies &shared_copies = tiles.front().copies;
    for (const StagedTile &tile : tiles)
      COALESCE_INTERNAL_ASSERT(same_pipeline(tile.copies, shared_copies), "the inputs staged at '",
                               loop_short_name(site_.loop), "' name different pipelines");
    if (tile_buffers(shared_copies) > 1) // two buffers, or a pipeline: pipeline_staged_copies' to build
      return PipelinedStaging::make(self);

    // One buffer: every thread copies its elements, a barrier makes the
    // tile visible, the body reads it, and a barrier keeps the next copy
    // after every read.
    Expr loop_var = Variable::make(Int(32), op->name);
    Expr which = simplify((loop_var - op->min) % 2);
    Stmt body = read_from_tiles(op->body, tiles, scan, which);
    std::vector<Stmt> copies;
    for (const StagedTile &tile : tiles)
      copies.push_back(per_thread_copy(tile, scan, tile.buffer + ".", [&](const std::vector<Expr> &c, const Expr &) {
        return Store::make(tile.buffer, shared_indices(tile, c, which), stored_value(tile, source_value(tile, c, {})));
      }));
    Stmt new_body = Block::make({Block::make(copies), publish_fence(tiles), Barrier::make(), body, Barrier::make()});
    Stmt result =
        For::make(op->name, op->min, op->extent, op->for_kind, new_body, op->gpu_dim, op->reduction_of, op->role);
    for (const StagedTile &tile : tiles) {
      std::vector<Expr> extents;
      for (int64_t e : tile.shared_extents)
        extents.push_back(static_cast<int>(e));
      result = Allocate::make(tile.buffer, tile.input->type, MemoryType::Shared, extents, result, tile.input->name);
    }
    return result;
  }
};

} // namespace

Stmt stage_inputs_in_shared(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const StagingLoop &at : staging_loops(s, env)) {
    StageAtLoop pass(staging_site(at), at.requests, env);
    result = pass.mutate(result);
    COALESCE_INTERNAL_ASSERT(pass.found, "staging loop '", at.loop, "' not found");
  }
  return merge_sibling_allocations(result);
}

} // namespace coalesce
