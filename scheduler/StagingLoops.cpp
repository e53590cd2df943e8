#include "scheduler/StagingLoops.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <algorithm>
#include <set>

namespace coalesce {

namespace {

// The Func whose reduction `func`'s is fused with (fuse_reduction_with,
// named on either side), or null.
const FuncContents *fused_partner(const Environment &env, const FuncContents &func) {
  if (!func.schedule.fused_reduction_with.empty())
    return env.find(func.schedule.fused_reduction_with);
  for (const FuncContents &other : env.funcs)
    if (other.schedule.fused_reduction_with == func.name)
      return &other;
  return nullptr;
}

std::set<std::string> loop_names(const Stmt &s) {
  struct Names : IRVisitor {
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const For *op) override {
      names.insert(op->name);
      IRVisitor::visit(op);
    }
  } names;
  names.visit_stmt(s);
  return std::move(names.names);
}

// A request at a loop that another stage's requests also stage at: fused
// reductions (fuse_reduction_with) run in one nest under the first
// update's loop names, so their tiles share the loop's copies and barriers,
// and an input both read is copied once for both.
void merge_request(StagingLoop &at, const FuncContents &func, size_t stage, const SharedStaging &request) {
  std::string here = stage_description(*at.func, at.stage), there = stage_description(func, stage);
  for (const SharedStaging &staged : at.requests) {
    if (staged.input == request.input) {
      if (staged.layout.transposed != request.layout.transposed || staged.layout.padding != request.layout.padding ||
          !same_pipeline(staged.copies, request.copies))
        user_error("in schedule for ", there, ": '", request.input, "' is staged at '", request.at_loop, "', where ",
                   here,
                   ", whose reduction runs in the same fused nest, stages it too, with another "
                   "layout or pipeline; one copy serves both, so stage it alike in both");
      return;
    }
    if (!same_pipeline(staged.copies, request.copies))
      user_error("in schedule for ", there, ": '", request.input, "' is staged at '", request.at_loop, "' with ",
                 describe(request.copies), ", but ", here, ", whose reduction runs in the same fused nest, stages '",
                 staged.input, "' there with ", describe(staged.copies),
                 "; the inputs staged at one loop share its copies and barriers, so they need the same pipeline");
  }
  at.requests.push_back(request);
  if (std::find(at.fused.begin(), at.fused.end(), &func) == at.fused.end())
    at.fused.push_back(&func);
}

} // namespace

std::vector<StagingLoop> staging_loops(const Stmt &s, const Environment &env) {
  const std::set<std::string> loops = loop_names(s);
  std::vector<StagingLoop> result;
  for (const FuncContents &func : env.funcs)
    for (size_t stage = 0; stage < func.schedule.stages.size(); ++stage)
      for (const SharedStaging &staged : func.schedule.stages[stage].staged_inputs) {
        // A fused update's loops may carry its partner's names.
        std::string loop = stage_prefix(func.name, stage) + staged.at_loop;
        const FuncContents *partner = fused_partner(env, func);
        if (!loops.count(loop) && partner)
          loop = stage_prefix(partner->name, stage) + staged.at_loop;
        auto at = std::find_if(result.begin(), result.end(), [&](const StagingLoop &l) { return l.loop == loop; });
        if (at == result.end())
          result.push_back(StagingLoop{loop, &func, stage, {staged}, {}});
        else if (at->func == &func)
          at->requests.push_back(staged); // all inputs staged at one loop share its copies and barriers
        else
          merge_request(*at, func, stage, staged);
      }
  return result;
}

StagingSite staging_site(const StagingLoop &at) {
  const FuncContents &func = *at.func;
  StagingSite site{at.loop, stage_description(func, at.stage), func.schedule.stages[at.stage].mma.kind, {}};
  if (site.warpgroup_mma()) {
    site.mma_operands.push_back(mma_operands(func, at.stage));
    for (const FuncContents *other : at.fused)
      site.mma_operands.push_back(mma_operands(*other, at.stage));
  }
  return site;
}

} // namespace coalesce
