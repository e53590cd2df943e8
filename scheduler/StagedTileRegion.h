#pragma once
// Shared by stage_inputs_in_shared and lower_tma_pipelines: where a staged
// input's tile lies. The input's calls inside the staging loop (lets
// expanded), each coordinate split into a part outside the loop and the
// span of the loops inside it, and the calls rewritten as loads of the
// tile.

#include "dsl/IR.h"
#include "dsl/IRVisitor.h"
#include "scheduler/StagedTile.h"
#include "scheduler/StagingLoops.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace coalesce::staging {

/// `e` with the lets in `lets` substituted, through lets that name lets (a
/// few levels deep); `each_form`, when given, sees each form on the way.
Expr expand_lets(Expr e, const std::map<std::string, Expr> &lets,
                 const std::function<void(const Expr &)> &each_form = {});

/// Every call of the input inside the loop, with lets expanded.
class FindCalls : public IRVisitor {
public:
  FindCalls(const std::string &input, const std::map<std::string, Expr> &lets, const std::set<std::string> &ambiguous)
      : input_(input), lets_(lets), ambiguous_(ambiguous) {}
  std::vector<std::vector<Expr>> calls;
  std::string ambiguous_name; ///< a loop or let a call's coordinates depend on that has no one range or value

private:
  using IRVisitor::visit;
  void visit(const Call *op) override;
  const std::string input_; // a copy: a caller may pass a temporary, and a reference would dangle
  const std::map<std::string, Expr> &lets_;
  const std::set<std::string> &ambiguous_;
};

/// Splits an affine index into its part outside the staging loop (`base`)
/// and the span of its inner-loop terms (`extent`); false where it is not
/// affine in the loops `inner` with constant coefficients. A term may be a
/// constant times an inner loop's variable or a chain of quotients and
/// remainders of it by positive constants (warp % 8 / 4), each over the
/// values the chain takes (the whole period where a remainder wraps).
bool affine_span(const Expr &index, const std::map<std::string, LoopInfo> &inner, Expr *base, int64_t *extent);

/// The input's calls rewritten as loads of its tile `buffer`, at their
/// coordinates less the tile's first element.
class ReplaceCalls : public IRMutator {
public:
  ReplaceCalls(const std::string &input, const std::string &buffer, const Region &region,
               const std::map<std::string, Expr> &lets)
      : input_(input), buffer_(buffer), region_(region), lets_(lets) {}

private:
  using IRMutator::visit;
  Expr visit(const Call *op, const Expr &self) override;
  const std::string &input_, &buffer_;
  const Region &region_;
  const std::map<std::string, Expr> &lets_;
};

/// An expression as the user wrote its names: "acc.s1.ko" reads "ko".
std::string readable(const Expr &e);

/// The tile of the input `request` stages at `op` (`scan` its body): where
/// it starts, its extents, its layout in shared memory (swizzled where
/// warpgroup MMAs read it). A UserError where the input's coordinates are
/// not affine in the loops inside `op`, or its reads start at different
/// places.
StagedTile plan_staged_tile(const StagingSite &site, const SharedStaging &request, const For *op, const ScanBody &scan,
                            const Environment &env);

/// `body` (a staging loop's, reading the inputs) reading each tile from
/// slot `slot` of its shared buffer instead.
Stmt read_from_tiles(const Stmt &body, const std::vector<StagedTile> &tiles, const ScanBody &scan, const Expr &slot);

/// The base of the passes that build one staging loop's copies
/// (stage_inputs_in_shared, pipeline_staged_copies, lower_tma_pipelines):
/// the site, the inputs staged there, whether its loop was found, and the
/// inputs' tiles planned at it.
class StagingSiteMutator : public IRMutator {
public:
  StagingSiteMutator(StagingSite site, std::vector<SharedStaging> requests, const Environment &env)
      : site_(std::move(site)), requests_(std::move(requests)), env_(env) {}
  bool found = false;

protected:
  const StagingSite site_;
  const std::vector<SharedStaging> requests_;
  const Environment &env_;

  /// The staged inputs' tiles at `op`, planned from its body's `scan`.
  std::vector<StagedTile> plan_tiles(const For *op, const ScanBody &scan) const {
    std::vector<StagedTile> tiles;
    for (const SharedStaging &request : requests_)
      tiles.push_back(plan_staged_tile(site_, request, op, scan, env_));
    return tiles;
  }
};

} // namespace coalesce::staging
