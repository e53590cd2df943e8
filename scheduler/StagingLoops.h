#pragma once
// Which inputs stage_inputs_in_shared stages at which loop of the nest:
// each stage's stage_in_shared requests grouped by the loop they name. Two
// fused reductions (fuse_reduction_with) run in one nest under the first
// update's loop names, so their requests meet at one loop: their tiles
// share its copies and barriers, and an input both stage is copied once
// for both (staged unlike, or in different pipelines: a UserError naming
// both).

#include "scheduler/Environment.h"
#include "scheduler/MmaOperands.h"

#include <string>
#include <vector>

namespace coalesce {

/// The inputs staged at one loop, the stage that asked first, and the
/// other stages staging there (fused reductions).
struct StagingLoop {
  std::string loop;
  const FuncContents *func;
  size_t stage;
  std::vector<SharedStaging> requests;
  std::vector<const FuncContents *> fused;
};

/// The staging loops of `s`, in the order of the Funcs, stages and
/// requests that name them.
std::vector<StagingLoop> staging_loops(const Stmt &s, const Environment &env);

/// What the passes that stage a loop's inputs (stage_inputs_in_shared,
/// lower_tma_pipelines) read of its stage: the loop, the stage for
/// messages, its MMA instruction (None: none), and with warpgroup MMAs the
/// operands of the stage and of each fused reduction staging there.
struct StagingSite {
  std::string loop;
  std::string stage;
  MmaKind mma_kind = MmaKind::None;
  std::vector<MmaOperands> mma_operands;
  bool warpgroup_mma() const { return is_warpgroup_mma(mma_kind); }
};
StagingSite staging_site(const StagingLoop &at);

} // namespace coalesce
