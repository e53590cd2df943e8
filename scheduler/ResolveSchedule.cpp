#include "scheduler/ResolveSchedule.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <algorithm>
#include <functional>

namespace coalesce {

namespace {


// The loops a reduction variable was split into, in the order that keeps
// its summation order: every loop from the outer half before any from the
// inner half.
void summation_order(const StageSchedule &stage, const std::string &var, std::vector<std::string> &out) {
  for (const Split &split : stage.splits)
    if (split.old_var == var) {
      summation_order(stage, split.outer, out);
      summation_order(stage, split.inner, out);
      return;
    }
  out.push_back(var);
}

void check_reassociation(const FuncContents &func, size_t s) {
  const StageSchedule &stage = func.schedule.stages[s];
  if (stage.allow_reassociation)
    return;
  std::vector<std::string> expected, actual;
  for (const std::string &root : stage.reduction_vars)
    summation_order(stage, root, expected);
  for (const Dim &dim : stage.dims)
    if (dim.is_rvar)
      actual.push_back(dim.var);
  for (size_t n = 0; n < expected.size() && n < actual.size(); ++n)
    if (expected[n] != actual[n])
      user_error("in schedule for ", stage_description(func, s), ": reduction loop '", actual[n],
                 "' is ordered outside '", expected[n],
                 "', which changes the order in which the reduction is summed, and with it the floating-point "
                 "result. Keep '", expected[n], "' outside '", actual[n], "', or call ", func.name,
                 ".update(", s - 1, ").allow_reassociation() if a different rounding is acceptable");
}

// Shared memory belongs to one GPU block and is filled by all its threads
// together, so the staging loop must be inside every block loop and outside
// every thread loop of the stage (a tile staged inside a thread loop would
// be filled by each thread with its own values, racing on the GPU).
void check_staging_loop(const FuncContents &func, size_t s, const SharedStaging &staged) {
  const std::vector<Dim> &dims = func.schedule.stages[s].dims;
  auto at = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == staged.at_loop; });
  std::string request = str_cat("in schedule for ", stage_description(func, s), ": stage_in_shared of '", staged.input,
                                "' at '", staged.at_loop, "', ");
  if (at == dims.end())
    user_error(request, "which is no longer a loop of ", stage_description(func, s),
               " (it was split after staging); stage at one of the loops it was split into");
  for (auto dim = dims.begin(); dim != dims.end(); ++dim) {
    if (dim <= at && dim->kind == ForKind::GpuThread)
      user_error(request, dim == at ? std::string("a loop") : "which is inside loop '" + dim->var + "'",
                 " mapped to GPU threads: each thread would fill the block's one tile with its own values. "
                 "Stage at a loop outside the thread loops (split the reduction and reorder its outer loop, 'ko' in "
                 "reorder({ko, ti, tj, ki, ...}), outside them)");
    if (dim >= at && dim->kind == ForKind::GpuBlock)
      user_error(request, dim == at ? std::string("a loop") : "which is outside loop '" + dim->var + "'",
                 " mapped to GPU blocks: shared memory belongs to one block; stage at a loop inside the block loops");
  }
}

class ReadsInput : public IRVisitor {
public:
  explicit ReadsInput(const std::string &name) : name_(name) {}
  bool found = false;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    found |= op->call_type == CallType::Input && op->name == name_;
    IRVisitor::visit(op);
  }
  const std::string name_; // a copy: a caller may pass a temporary, and a reference would dangle
};

// The Funcs that read `name` once inline Funcs are substituted into their
// callers: `mid = acc + bias; out = gelu(mid)` with `mid` inline reads `acc`
// in `out`, so `out` is where `acc` may be computed. Consumers come after
// their producers in env.funcs and are resolved first, so their placements
// are settled here.
std::vector<std::string> consumers_after_inlining(const Environment &env, const std::string &name) {
  std::vector<std::string> result;
  for (const std::string &consumer : env.consumers_of(name)) {
    const FuncContents *func = env.find(consumer);
    std::vector<std::string> through = {consumer};
    if (func && func->schedule.placement == Placement::Inline)
      through = consumers_after_inlining(env, consumer);
    for (const std::string &c : through)
      if (std::find(result.begin(), result.end(), c) == result.end())
        result.push_back(c);
  }
  return result;
}

void resolve_placement(Environment &env, FuncContents &func, bool is_output) {
  FuncSchedule &schedule = func.schedule;
  if (is_output) {
    if (schedule.placement_set && schedule.placement != Placement::Root)
      user_error("in schedule for '", func.name, "': '", func.name,
                 "' is the pipeline's output, which is always computed at root; compute_at and inline apply to the "
                 "Funcs it calls");
    schedule.placement = Placement::Root;
    return;
  }
  if (schedule.min_blocks_per_sm > 0)
    user_error("in schedule for '", func.name, "': gpu_min_blocks_per_sm applies to the kernels of the output; '",
               func.name, "' is not the output (call it on '", env.output().name, "')");
  if (schedule.block_group_rows > 0)
    user_error("in schedule for '", func.name, "': gpu_block_groups orders the blocks of the output's kernels; '",
               func.name, "' is not the output (call it on '", env.output().name, "')");
  if (schedule.persistent_blocks > 0)
    user_error("in schedule for '", func.name, "': gpu_persistent_blocks sizes the grid of the output's kernels; '",
               func.name, "' is not the output (call it on '", env.output().name, "')");
  if (schedule.consumer_schedule != ConsumerSchedule::Together)
    user_error("in schedule for '", func.name, "': gpu_consumer_schedule(",
               consumer_schedule_name(schedule.consumer_schedule), ") applies to the output's kernels; '", func.name,
               "' is not the output (call it on '", env.output().name, "')");
  if (schedule.partition_full_tiles)
    user_error("in schedule for '", func.name, "': partition_full_tiles applies to the output's statements; '",
               func.name, "' is not the output (call it on '", env.output().name, "')");
  if (!schedule.placement_set)
    schedule.placement = func.updates.empty() ? Placement::Inline : Placement::Root;
  if (schedule.placement == Placement::Inline && !func.updates.empty())
    user_error("cannot inline '", func.name, "': it has update definitions (a reduction)");
  if (schedule.memory != MemoryType::Auto && schedule.memory != MemoryType::Heap &&
      schedule.placement != Placement::At)
    user_error("in schedule for '", func.name, "': store_in(", memory_type_name(schedule.memory),
               ") needs '", func.name, "' computed inside a loop of its consumer (compute_at); a root or inline Func "
               "has no tile to hold");
  if (schedule.placement != Placement::At)
    return;
  const FuncContents *site = env.find(schedule.at_func);
  std::vector<std::string> consumers = consumers_after_inlining(env, func.name);
  if (!site || std::find(consumers.begin(), consumers.end(), schedule.at_func) == consumers.end())
    user_error("in schedule for '", func.name, "': compute_at '", schedule.at_func, "', which does not call '",
               func.name, "'; compute a Func inside a loop of a Func that uses it");
  if (consumers.size() != 1)
    user_error("in schedule for '", func.name, "': compute_at '", schedule.at_func, "', but '", func.name,
               "' is also used by other Funcs; compute it at root instead");
  if (site->schedule.placement != Placement::Root)
    user_error("in schedule for '", func.name, "': compute_at '", site->name, "', which is itself computed inside "
               "another Func; compute '", func.name, "' at a loop of a root Func");
  std::vector<std::string> now;
  for (const Dim &dim : site->schedule.stages.front().dims)
    now.push_back(dim.var);
  // A consumer loop mapped (gpu_threads, unroll, ...) after compute_at left
  // a serial copy here. (The producer may still change its own copies.)
  bool remapped = false;
  for (const Dim &mine : func.schedule.stages.front().dims)
    for (const Dim &theirs : site->schedule.stages.front().dims)
      remapped |= mine.mirrored && mine.var == theirs.var && theirs.kind != ForKind::Serial &&
                  (mine.kind != theirs.kind || mine.gpu_dim != theirs.gpu_dim);
  if (now != schedule.mirrored_from || remapped)
    user_error("in schedule for '", func.name, "': '", site->name, "' was rescheduled after ", func.name,
               ".compute_at(", site->name, ", ", schedule.at_var, "); schedule '", site->name,
               "' fully first, then call compute_at");
}

} // namespace

void resolve_schedule(Environment &env) {
  // Consumers first: a compute_at site must be settled before its producers.
  for (size_t f = env.funcs.size(); f-- > 0;)
    resolve_placement(env, env.funcs[f], f + 1 == env.funcs.size());
  for (const FuncContents &func : env.funcs) {
    for (size_t s = 0; s < func.schedule.stages.size(); ++s) {
      check_reassociation(func, s);
      const StageSchedule &stage = func.schedule.stages[s];
      const Expr &value = s == 0 ? func.pure.value : func.updates[s - 1].value;
      for (const SharedStaging &staged : stage.staged_inputs) {
        check_staging_loop(func, s, staged);
        ReadsInput reads(staged.input);
        reads.visit_expr(value);
        if (!reads.found)
          user_error("in schedule for ", stage_description(func, s), ": stage_in_shared of '", staged.input, "' at '",
                     staged.at_loop, "', which ", stage_description(func, s),
                     " does not read; stage only the inputs its definition reads");
      }
    }
  }
}

} // namespace coalesce
