#include "scheduler/BuildLoopNest.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/ReductionTailAddsZero.h"
#include "scheduler/Simplify.h"
#include "scheduler/SplitKSlices.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace coalesce {

namespace {

// Reduction variables and their domains, as the definition wrote them.
class FindRVarDomains : public IRVisitor {
public:
  std::map<std::string, std::pair<Expr, Expr>> domains;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Reduction)
      domains.emplace(op->name, std::make_pair(op->reduction_min, op->reduction_extent));
  }
};

// Rewrites a definition's value for one stage's loop nest: its own variables
// become the stage's qualified names, calls to Funcs become loads.
class RewriteValue : public IRMutator {
public:
  RewriteValue(const Environment &env, const FuncContents &func, size_t stage, const std::string &prefix,
               const std::vector<Expr> &self_indices)
      : env_(env), func_(func), stage_(stage), prefix_(prefix), self_indices_(self_indices) {}

private:
  using IRMutator::visit;
  Expr visit(const Variable *op, const Expr &self) override {
    if (op->variable_kind == VariableKind::Param)
      return self;
    return Variable::make(Int(32), prefix_ + op->name);
  }
  Expr visit(const Call *op, const Expr &self) override {
    Expr rebuilt = IRMutator::visit(op, self);
    const auto *call = rebuilt.as<Call>();
    if (call->call_type != CallType::Func)
      return rebuilt;
    if (call->name == func_.name)
      return Load::make(call->type, call->name, self_indices_);
    const FuncContents *callee = env_.find(call->name);
    COALESCE_INTERNAL_ASSERT(callee, "call of unknown Func '", call->name, "'");
    if (callee->schedule.placement == Placement::Root)
      return Load::make(call->type, call->name, call->args);
    // Computed at a loop of this Func's pure stage: its buffer is indexed by
    // this stage's loops below that site.
    if (stage_ != 0)
      user_error("'", func_.name, "' (update ", stage_ - 1, ") reads '", call->name, "', which is computed inside '",
                 func_.name, "'s pure loops and is gone by then; compute '", call->name, "' at root");
    const auto &dims = func_.schedule.stages.front().dims;
    std::vector<Expr> indices;
    bool below_site = false;
    for (const Dim &dim : dims) {
      if (below_site)
        indices.push_back(Variable::make(Int(32), prefix_ + dim.var));
      below_site |= dim.var == callee->schedule.at_var;
    }
    return Load::make(call->type, call->name, indices);
  }
  const Environment &env_;
  const FuncContents &func_;
  size_t stage_;
  const std::string prefix_; // a copy: a caller may pass a temporary, and a reference would dangle
  const std::vector<Expr> self_indices_; // a copy, like prefix_
};

// What one stage's nest is made of, before it becomes statements.
struct StagePlan {
  std::string prefix;
  std::vector<Split> splits;         // with qualified names, in order applied
  std::vector<Dim> dims;             // qualified, outermost first
  std::map<std::string, Expr> extent; // of every qualified variable
  std::map<std::string, Expr> min;    // of root reduction variables
  std::vector<Expr> store_indices;
  std::vector<Expr> buffer_extents;   // for a Func computed at a site
  std::vector<Split> guarded;         // splits whose tail needs a guard
  /// Our pure variables that are the consumer's own loops above the site.
  std::vector<std::pair<std::string, Expr>> aliases;
};

// True when `factor` provably divides `extent` (both constant), so the split
// leaves no tail to guard.
bool divides(const Expr &extent, int factor) {
  auto value = as_const_int(extent);
  return value && *value % factor == 0;
}

StagePlan plan_stage(const Environment &env, const FuncContents &func, size_t s) {
  const StageSchedule &stage = func.schedule.stages[s];
  StagePlan plan;
  plan.prefix = stage_prefix(func.name, s);
  auto own = [&](const std::string &name) { return plan.prefix + name; };
  FindRVarDomains rvars;
  rvars.visit_expr(s == 0 ? func.pure.value : func.updates[s - 1].value);
  for (const auto &[name, domain] : rvars.domains) {
    plan.extent[own(name)] = domain.second;
    plan.min[own(name)] = domain.first;
  }
  for (size_t p = 0; p < func.pure_vars.size(); ++p)
    plan.extent[own(func.pure_vars[p])] = env.domain[p];
  // A reduction split across blocks covers, in this block, its slice of
  // the split variable (whose loops, splits and guards follow from it).
  if (const SplitReduction *split = split_of(env, func, s)) {
    std::string rvar = own(split->rvar);
    int step = 1;
    for (const Split &sp : stage.splits)
      if (sp.old_var == split->rvar && !sp.is_fuse) {
        step = sp.factor;
        break;
      }
    COALESCE_INTERNAL_ASSERT(plan.extent.count(rvar), "split_k of '", split->rvar, "', not a reduction variable of '",
                             func.name, "'");
    const FuncContents &consumer = *env.find(func.schedule.at_func);
    SliceRange range = slice_range(plan.min[rvar], plan.extent[rvar], step, slice_count(consumer),
                                   Variable::make(Int(32), slice_loop_name(consumer)));
    plan.min[rvar] = range.min;
    plan.extent[rvar] = range.extent;
  }

  bool at_site = func.schedule.placement == Placement::At;
  if (at_site) {
    // The consumer's splits, renamed: its loops at and above the site stay
    // the consumer's; its pure variables become ours; the rest become our
    // mirrored loops.
    const FuncContents &consumer = *env.find(func.schedule.at_func);
    const StageSchedule &consumer_stage = consumer.schedule.stages.front();
    std::string consumer_prefix = stage_prefix(consumer.name, 0);
    std::vector<std::string> outer;
    for (const Dim &dim : consumer_stage.dims) {
      outer.push_back(dim.var);
      if (dim.var == func.schedule.at_var)
        break;
    }
    auto map_name = [&](const std::string &name) {
      if (std::find(outer.begin(), outer.end(), name) != outer.end())
        return consumer_prefix + name;
      for (size_t p = 0; p < consumer.pure_vars.size(); ++p)
        if (consumer.pure_vars[p] == name)
          return own(func.pure_vars[p]);
      return own(name);
    };
    for (const Split &split : consumer_stage.splits)
      plan.splits.push_back(Split{map_name(split.old_var), map_name(split.outer), map_name(split.inner),
                                  split.factor, false, split.is_fuse});
    for (size_t p = 0; p < consumer.pure_vars.size(); ++p)
      if (std::find(outer.begin(), outer.end(), consumer.pure_vars[p]) != outer.end())
        plan.aliases.emplace_back(own(func.pure_vars[p]),
                                  Variable::make(Int(32), consumer_prefix + consumer.pure_vars[p]));
  }
  for (const Split &split : stage.splits)
    if (split.is_rvar || !at_site)
      plan.splits.push_back(Split{own(split.old_var), own(split.outer), own(split.inner), split.factor, split.is_rvar, split.is_fuse});
  for (const Split &split : plan.splits) {
    if (split.is_fuse) {
      // Both halves exist before they are fused; the inner one has the
      // constant extent `factor`.
      Expr outer_extent = plan.extent[split.outer];
      COALESCE_INTERNAL_ASSERT(outer_extent.defined(), "fuse of '", split.outer, "' before its extent is known");
      plan.extent[split.old_var] = simplify(outer_extent * split.factor);
      continue;
    }
    // Every split variable descends from a pure or reduction variable whose
    // extent is known, and splits come in the order they were applied.
    Expr old_extent = plan.extent[split.old_var];
    COALESCE_INTERNAL_ASSERT(old_extent.defined(), "split of '", split.old_var, "' before its extent is known");
    plan.extent[split.outer] = simplify(ceil_div(old_extent, split.factor));
    plan.extent[split.inner] = split.factor;
    // gpu_cluster: the clustered block loop runs whole clusters; the blocks
    // past the last tile compute nothing of the output (the split's guard)
    // but take part in their cluster's copies and barriers.
    int cluster = 1;
    if (s == 0 && func.schedule.cluster_blocks > 0 && split.outer == own(func.schedule.cluster_var)) {
      cluster = func.schedule.cluster_blocks;
      plan.extent[split.outer] = simplify(ceil_div(plan.extent[split.outer], cluster) * cluster);
    }
    if (!divides(old_extent, split.factor * cluster) && (split.is_rvar || !at_site))
      plan.guarded.push_back(split);
  }
  for (const Dim &dim : stage.dims) {
    Dim qualified = dim;
    qualified.var = own(dim.var);
    plan.dims.push_back(qualified);
  }
  if (at_site) {
    for (const Dim &dim : func.schedule.stages.front().dims)
      if (dim.mirrored) {
        plan.store_indices.push_back(Variable::make(Int(32), own(dim.var)));
        plan.buffer_extents.push_back(plan.extent[own(dim.var)]);
      }
  } else {
    for (const std::string &var : func.pure_vars)
      plan.store_indices.push_back(Variable::make(Int(32), own(var)));
  }
  return plan;
}

Stmt build_stage(const Environment &env, const FuncContents &func, size_t s) {
  StagePlan plan = plan_stage(env, func, s);
  const Expr &value = s == 0 ? func.pure.value : func.updates[s - 1].value;
  Expr rewritten = RewriteValue(env, func, s, plan.prefix, plan.store_indices).mutate(value);
  Stmt body = Store::make(func.name, plan.store_indices, rewritten);

  // Each let and guard goes just inside the deepest loop it depends on, so
  // that, say, the reduction's tail guard k < K wraps the whole register
  // block instead of each element. Depth -1: outside the stage's loops.
  std::map<std::string, int> depth;
  for (size_t d = 0; d < plan.dims.size(); ++d)
    depth[plan.dims[d].var] = static_cast<int>(d);
  auto depth_of = [&](const std::string &name) {
    auto it = depth.find(name);
    return it == depth.end() ? -1 : it->second;
  };
  // Splits applied later define the variables earlier ones use, so they
  // come first here.
  for (auto split = plan.splits.rbegin(); split != plan.splits.rend(); ++split) {
    if (split->is_fuse) {
      // The fused loop defines both halves.
      depth[split->outer] = depth[split->inner] = depth_of(split->old_var);
      continue;
    }
    depth[split->old_var] = std::max(depth_of(split->outer), depth_of(split->inner));
  }
  for (const auto &[name, value] : plan.aliases)
    depth[name] = -1;

  // A reduction on tensor cores keeps its partial last step in the same
  // loop, behind the guard of each instruction's k step. Its copies fill
  // what lies past K with 0 (zero_fill is required there), so the step is
  // the same instructions on the same slots: one pipeline runs every step,
  // without a second pipeline's drain and refill for the last (and the
  // producer warps, which may leave the kernel after their pipeline, serve
  // all of them), and the kernel has one copy of its loop, not two (the
  // warp MMA default's PTX 40% smaller; docs/performance.md, "The partial
  // last K step on tensor cores"). The FFMA path peels the step instead
  // (its guard of each k, in the loop, cost a ragged K 21% on an H100),
  // unless the step adds only zeros (adds_zero below).
  const bool one_pipeline = s > 0 && func.schedule.stages[s].mma.kind != MmaKind::None;

  // `unguarded`: reduction splits whose tail this copy of the loops never
  // reaches (see the partition below), so their guard is left out.
  auto wrap_level = [&](Stmt inner, int level, const std::set<std::string> &unguarded) {
    for (const Split &split : plan.guarded)
      if (depth_of(split.old_var) == level && !unguarded.count(split.old_var)) {
        Expr min = plan.min.count(split.old_var) ? plan.min[split.old_var] : Expr(0);
        inner = IfThenElse::make(Variable::make(Int(32), split.old_var) < min + plan.extent[split.old_var], inner);
      }
    // Fuses come after the splits whose loops they fuse, so their lets wrap
    // (define) the variables the split lets below read.
    for (const Split &split : plan.splits)
      if (split.is_fuse && depth_of(split.old_var) == level) {
        Expr fused = Variable::make(Int(32), split.old_var);
        inner = LetStmt::make(split.inner, fused % split.factor, inner);
        inner = LetStmt::make(split.outer, fused / split.factor, inner);
      } else if (!split.is_fuse && depth_of(split.old_var) == level) {
        Expr old = Variable::make(Int(32), split.outer) * split.factor + Variable::make(Int(32), split.inner);
        if (plan.min.count(split.old_var) && !is_const(plan.min[split.old_var], 0))
          old = old + plan.min[split.old_var];
        inner = LetStmt::make(split.old_var, old, inner);
      }
    return inner;
  };

  std::function<Stmt(size_t, const std::set<std::string> &)> build_level = [&](size_t d,
                                                                             const std::set<std::string> &unguarded) {
    if (d == plan.dims.size())
      return wrap_level(body, static_cast<int>(d) - 1, unguarded);
    const Dim &dim = plan.dims[d];
    Expr extent = plan.extent[dim.var];
    COALESCE_INTERNAL_ASSERT(extent.defined(), "no extent for loop '", dim.var, "'");
    bool unsplit_rvar = plan.min.count(dim.var) != 0;
    Expr min = unsplit_rvar ? plan.min[dim.var] : Expr(0);
    std::string short_name = dim.var.substr(plan.prefix.size());
    if ((dim.kind == ForKind::Unrolled || dim.kind == ForKind::Vectorized || dim.kind == ForKind::GpuThread) &&
        !as_const_int(extent))
      user_error("in schedule for '", func.name, "': cannot make loop '", short_name, "' ",
                 for_kind_name(dim.kind), ": its extent ", to_string(extent),
                 " is not a constant; split it by a constant factor and map the inner loop");
    std::vector<std::string> reduction_of;
    if (dim.is_rvar)
      reduction_of.push_back(func.name);
    Stmt loops;
    // A serial reduction loop whose split leaves a tail runs in two parts:
    // the full steps without the tail guard, then the last, partial step
    // with it. The steady state then has no branch per element.
    const Split *tail = nullptr;
    for (const Split &split : plan.guarded)
      if (split.is_rvar && split.outer == dim.var && dim.kind == ForKind::Serial && !unguarded.count(split.old_var))
        tail = &split;
    if (tail && !one_pipeline) {
      std::set<std::string> steady = unguarded;
      steady.insert(tail->old_var);
      Expr full_steps = simplify(plan.extent[tail->old_var] / tail->factor);
      loops = Block::make({For::make(dim.var, 0, full_steps, dim.kind, build_level(d + 1, steady), dim.gpu_dim,
                                     reduction_of),
                           For::make(dim.var, full_steps, simplify(extent - full_steps), dim.kind,
                                     build_level(d + 1, unguarded), dim.gpu_dim, reduction_of)});
    } else {
      loops = For::make(dim.var, min, extent, dim.kind, build_level(d + 1, unguarded), dim.gpu_dim, reduction_of);
    }
    return wrap_level(loops, static_cast<int>(d) - 1, unguarded);
  };
  // An FFMA reduction whose partial last step adds only zeros (read from
  // zero-filled tiles) runs that step in the one loop, unguarded: the
  // kernel has one copy of its loop instead of two.
  std::set<std::string> adds_zero;
  if (!one_pipeline)
    for (const Split &split : plan.guarded)
      if (split.is_rvar && plan.min.count(split.old_var) &&
          reduction_tail_adds_zero(func, s, split.old_var.substr(plan.prefix.size()), plan.min[split.old_var],
                                   plan.extent[split.old_var]))
        adds_zero.insert(split.old_var);
  Stmt nest = build_level(0, adds_zero);
  for (const auto &[name, value] : plan.aliases)
    nest = LetStmt::make(name, value, nest);
  return nest;
}

Stmt build_func(const Environment &env, const FuncContents &func) {
  std::vector<Stmt> stages;
  for (size_t s = 0; s < func.schedule.stages.size(); ++s)
    stages.push_back(build_stage(env, func, s));
  return Block::make(stages);
}

// Injects a Func computed at a consumer's loop into that loop's body.
// A split producer's site is built the same way: split_reduction_across_blocks
// turns it into slices afterwards (scheduler/SplitReductionAcrossBlocks.h).
class InjectAtSite : public IRMutator {
public:
  InjectAtSite(const std::string &loop, Stmt produce, const FuncContents &func, MemoryType memory,
               std::vector<Expr> extents)
      : loop_(loop), produce_(std::move(produce)), func_(func), memory_(memory), extents_(std::move(extents)) {}
  bool injected = false;

private:
  using IRMutator::visit;
  Stmt visit(const For *op, const Stmt &self) override {
    if (op->name != loop_)
      return IRMutator::visit(op, self);
    injected = true;
    Stmt body = Allocate::make(func_.name, func_.type, memory_, extents_, Block::make({produce_, op->body}));
    return For::make(op->name, op->min, op->extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
  }
  const std::string loop_; // a copy: a caller may pass a temporary, and a reference would dangle
  Stmt produce_;
  const FuncContents &func_;
  MemoryType memory_;
  std::vector<Expr> extents_;
};

} // namespace

Stmt build_loop_nest(const Environment &env) {
  Stmt nest = build_func(env, env.output());
  // Consumers before producers, so each producer lands outside (root) or
  // inside (at a site) the nests that read it.
  for (size_t f = env.funcs.size() - 1; f-- > 0;) {
    const FuncContents &func = env.funcs[f];
    Stmt produce = build_func(env, func);
    if (func.schedule.placement == Placement::Root) {
      MemoryType memory = func.schedule.memory == MemoryType::Auto ? MemoryType::Heap : func.schedule.memory;
      nest = Allocate::make(func.name, func.type, memory, env.domain, Block::make({produce, nest}));
      continue;
    }
    StagePlan plan = plan_stage(env, func, 0);
    MemoryType memory = func.schedule.memory;
    bool constant = std::all_of(plan.buffer_extents.begin(), plan.buffer_extents.end(),
                                [](const Expr &e) { return as_const_int(e).has_value(); });
    if (memory == MemoryType::Auto)
      memory = constant ? MemoryType::Register : MemoryType::Heap;
    if (!constant && memory != MemoryType::Heap)
      user_error("in schedule for '", func.name, "': its tile at '", func.schedule.at_func, ".",
                 func.schedule.at_var, "' has a size that is not a constant, so it cannot be stored in ",
                 memory_type_name(memory), "; split the consumer's loops below '", func.schedule.at_var,
                 "' by constant factors");
    InjectAtSite inject(stage_prefix(func.schedule.at_func, 0) + func.schedule.at_var, produce, func, memory,
                        plan.buffer_extents);
    nest = inject.mutate(nest);
    COALESCE_INTERNAL_ASSERT(inject.injected, "compute_at site of '", func.name, "' not found");
  }
  return nest;
}

std::vector<Argument> workspace_arguments(const Environment &env) {
  const FuncContents &output = env.output();
  if (!output.schedule.split_k.requested())
    return {};
  // One arrival counter per block of the loops down to the fuse site.
  const FuncContents &producer = *env.find(output.schedule.split_k.producer);
  StagePlan plan = plan_stage(env, output, 0);
  std::vector<std::string> block_loops;
  std::vector<Expr> block_extents;
  for (const Dim &dim : plan.dims) {
    block_loops.push_back(dim.var);
    block_extents.push_back(plan.extent[dim.var]);
    if (dim.var == stage_prefix(output.name, 0) + producer.schedule.at_var)
      break;
  }
  // A tile's registers: the producer's allocation at the fuse site.
  Expr tile_elements = 1;
  for (const Expr &extent : plan_stage(env, producer, 0).buffer_extents)
    tile_elements = tile_elements * extent;
  return split_k_workspace(env, block_loops, block_extents, simplify(tile_elements));
}

} // namespace coalesce
