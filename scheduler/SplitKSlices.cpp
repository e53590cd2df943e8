#include "scheduler/SplitKSlices.h"

#include "dsl/IROperator.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

namespace coalesce {

std::string partials_name(const std::string &producer) { return producer + ".partials"; }
std::string counters_name(const std::string &producer) { return producer + ".tile_counters"; }

const SplitReduction *split_of(const Environment &env, const FuncContents &func, size_t s) {
  if (s == 0 || func.schedule.placement != Placement::At)
    return nullptr;
  const FuncContents *consumer = env.find(func.schedule.at_func);
  if (!consumer || !consumer->schedule.split_k.requested() || consumer->schedule.split_k.producer != func.name)
    return nullptr;
  return &consumer->schedule.split_k;
}

std::string slice_loop_name(const FuncContents &consumer) {
  return stage_prefix(consumer.name, 0) + consumer.schedule.split_k.slice_var;
}

std::string slice_count_name(const FuncContents &consumer) { return slice_loop_name(consumer) + ".slices"; }

Expr slice_count(const FuncContents &consumer) {
  const SplitReduction &split = consumer.schedule.split_k;
  if (split.splits_tail_only())
    return Variable::make(Int(32), slice_count_name(consumer));
  return Expr(split.slices);
}

SliceRange slice_range(const Expr &min, const Expr &extent, int step, const Expr &slices, const Expr &slice) {
  Expr chunk = simplify(ceil_div(ceil_div(extent, step), slices) * step);
  Expr start = slice * chunk;
  return SliceRange{simplify(min + start), simplify(max(coalesce::min(chunk, extent - start), 0))};
}

Expr split_iterations(const FuncContents &consumer, const std::string &loop, const Expr &extent) {
  const SplitReduction &split = consumer.schedule.split_k;
  if (split.splits_tail_only() && loop == stage_prefix(consumer.name, 0) + split.tail_loop)
    return simplify(coalesce::min(Expr(split.tail_iterations), extent));
  return extent;
}

std::vector<Argument> split_k_workspace(const Environment &env, const std::vector<std::string> &block_loops,
                                        const std::vector<Expr> &block_extents, const Expr &tile_elements) {
  const FuncContents &output = env.output();
  const SplitReduction &split = output.schedule.split_k;
  if (!split.requested())
    return {};
  const FuncContents *producer = env.find(split.producer);
  std::vector<Expr> partial_extents;
  switch (partials_layout(split.mode)) {
  case PartialsLayout::ByElement:
    if (split_keeps_slices_apart(split.mode))
      partial_extents.push_back(split.slices);
    partial_extents.insert(partial_extents.end(), env.domain.begin(), env.domain.end());
    break;
  case PartialsLayout::ByRegister:
    for (size_t b = 0; b < block_loops.size(); ++b)
      partial_extents.push_back(split_iterations(output, block_loops[b], block_extents[b]));
    partial_extents.push_back(split.slices);
    partial_extents.push_back(tile_elements);
    break;
  }
  Argument partials{partials_name(split.producer), Argument::Kind::Buffer, producer->type, partial_extents, false, {}};
  partials.is_workspace = true;
  if (!split_counts_arrivals(split.mode))
    return {partials};
  Argument counters{counters_name(split.producer), Argument::Kind::Buffer, Int(32), block_extents, false, {}};
  counters.is_workspace = true;
  return {partials, counters};
}

PartialsLayout partials_layout(SplitKMode mode) {
  switch (mode) {
  case SplitKMode::Deterministic: return PartialsLayout::ByRegister;
  case SplitKMode::Atomic:
  case SplitKMode::CombineKernel: return PartialsLayout::ByElement;
  }
  return PartialsLayout::ByElement;
}

bool split_keeps_slices_apart(SplitKMode mode) {
  switch (mode) {
  case SplitKMode::Deterministic:
  case SplitKMode::CombineKernel:
    return true;
  case SplitKMode::Atomic:
    return false;
  }
  return true;
}

bool split_counts_arrivals(SplitKMode mode) {
  switch (mode) {
  case SplitKMode::Deterministic:
  case SplitKMode::Atomic:
    return true;
  case SplitKMode::CombineKernel:
    return false;
  }
  return true;
}

} // namespace coalesce
