#include "scheduler/CheckSplitK.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "scheduler/LoopNames.h"

#include <algorithm>

namespace coalesce {

namespace {

// A kernel of its own runs the output's definition point by point, from the
// slices' sums: it can read inputs, not tiles of other Funcs that live in
// the output's kernel.
void check_combine_kernel(const std::string &where, const Environment &env, const FuncContents &consumer,
                          const SplitReduction &split) {
  const char *mode = split_k_mode_name(split.mode);
  if (!consumer.updates.empty())
    user_error(where, ": in ", mode, " mode a kernel of its own runs '", consumer.name,
               "'s definition after the combine, which needs it to be one pure definition; '", consumer.name, "' has ",
               consumer.updates.size(), consumer.updates.size() == 1 ? " update definition" : " update definitions",
               ": use SplitKMode::Deterministic");
  for (const std::string &func : env.callees_of(consumer.name))
    if (func != split.producer)
      user_error(where, ": in ", mode, " mode a kernel of its own runs '", consumer.name,
                 "'s definition point by point from the combined sums, but it reads '", func,
                 "', a Func computed inside the output's kernel, which the combine's kernel does not have; read only '",
                 split.producer, "', inputs and parameters there, or use SplitKMode::Deterministic");
}

// split_k_tail: the tail loop's blocks become work units (the split tiles' slices,
// then whole tiles), each arriving once at its tile's counter.
void check_tail(const std::string &where, const FuncContents &consumer, const SplitReduction &split) {
  std::string tail = str_cat(where, " with split_k_tail(", split.tail_loop, ", ", split.tail_iterations, ")");
  const std::vector<Dim> &dims = consumer.schedule.stages.front().dims;
  auto dim = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == split.tail_loop; });
  if (dim == dims.end())
    user_error(tail, ": '", split.tail_loop, "' is no longer a loop of '", consumer.name,
               "' (it was rescheduled after split_k_tail); name one of its block loops");
  if (dim->kind != ForKind::GpuBlock)
    user_error(tail, ": '", split.tail_loop, "' is ", for_kind_name(dim->kind),
               "; its iterations become blocks of whole tiles and of slices, so it must be a block loop");
  if (split.mode == SplitKMode::CombineKernel)
    user_error(tail, ": in combine-kernel mode a kernel of its own adds every tile's slices, but the whole tiles "
                     "write none; use SplitKMode::Deterministic or SplitKMode::Atomic");
  if (consumer.schedule.persistent_blocks > 0)
    user_error(tail, " and gpu_persistent_blocks: a block arrives at one tile's counter per launch, and a "
                     "persistent block walks several tiles; drop one of them");
}

void check_split(const Environment &env, const FuncContents &consumer) {
  const SplitReduction &split = consumer.schedule.split_k;
  std::string where = str_cat("in schedule for '", consumer.name, "': split_k of '", split.producer, "' over '",
                              split.rvar, "'");
  if (&consumer != &env.output())
    user_error(where, ": '", consumer.name, "' is not the pipeline's output; the slices and their combine are "
               "blocks of the output's kernel, so split_k applies to the output (call it on '", env.output().name,
               "')");
  const FuncContents *producer = env.find(split.producer);
  COALESCE_INTERNAL_ASSERT(producer, "split_k of unknown Func '", split.producer, "'");
  if (producer->schedule.placement != Placement::At || producer->schedule.at_func != consumer.name)
    user_error(where, ": '", split.producer, "' is no longer fused into '", consumer.name,
               "' (it was rescheduled after split_k); fuse it at the block loop again");
  const StageSchedule &update = producer->schedule.stages[1];
  const auto *add = producer->updates[0].value.as<Add>();
  const auto *self = add ? add->a.as<Call>() : nullptr;
  if (!self || self->call_type != CallType::Func || self->name != producer->name)
    user_error(where, ": its update ", to_string(producer->updates[0].value),
               " is not a sum (", producer->name, "(...) + term); only sums are split into slices that add up");
  if (update.reduction_vars.size() != 1)
    user_error(where, ": '", producer->name, "' (update 0) reduces over ", update.reduction_vars.size(),
               " variables; split_k splits a sum over one");
  if (!update.allow_reassociation)
    user_error(where, ": the slices are summed separately and then added in slice order, which changes the order "
               "in which '", producer->name, "' is summed, and with it the floating-point result; call ",
               producer->name, ".update(0).allow_reassociation() if a different rounding is acceptable");
  // The slice loop (GPU z) goes just inside the fuse site: every loop down
  // to the site must be a block loop, none below it, and z must be free.
  const std::vector<Dim> &dims = consumer.schedule.stages.front().dims;
  bool below_site = false;
  for (const Dim &dim : dims) {
    if (!below_site && dim.kind != ForKind::GpuBlock)
      user_error(where, ": '", split.producer, "' is fused at '", producer->schedule.at_var, "', inside loop '",
                 dim.var, "', which is ", for_kind_name(dim.kind),
                 "; the slices are GPU blocks, so fuse at the innermost of the output's block loops, with only block "
                 "loops outside it");
    if (below_site && dim.kind == ForKind::GpuBlock)
      user_error(where, ": '", split.producer, "' is fused at '", producer->schedule.at_var, "', outside block loop '",
                 dim.var, "'; fuse at the innermost block loop, inside which the slice loop goes");
    if (dim.kind == ForKind::GpuBlock && dim.gpu_dim == 2)
      user_error(where, ": block loop '", dim.var, "' already takes GPU dimension z, which the slices need; map at "
                 "most two loops to blocks");
    below_site |= dim.var == producer->schedule.at_var;
  }
  if (split.mode == SplitKMode::CombineKernel)
    check_combine_kernel(where, env, consumer, split);
  if (split.splits_tail_only())
    check_tail(where, consumer, split);
}

} // namespace

void check_split_k(const Environment &env) {
  for (const FuncContents &func : env.funcs)
    if (func.schedule.split_k.requested())
      check_split(env, func);
}

} // namespace coalesce
