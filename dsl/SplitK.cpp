// Func::split_k: records a reduction split across GPU blocks. The checks a
// call can make alone are here; those that need the whole pipeline (the
// summation order, the block loops around the site) are in
// scheduler/CheckSplitK.cpp.

#include "dsl/AllOrNothing.h"
#include "dsl/Error.h"
#include "dsl/Func.h"

#include <algorithm>

namespace coalesce {

const char *split_k_mode_name(SplitKMode mode) {
  switch (mode) {
  case SplitKMode::Deterministic: return "deterministic";
  case SplitKMode::Atomic: return "atomic";
  case SplitKMode::CombineKernel: return "combine-kernel";
  }
  return "?";
}

/// Enough slices for any GPU (over a hundred multiprocessors, a few blocks each), few
/// enough that the deterministic combine (one read per slice) stays short.
constexpr int kMaxSlices = 256;

Func &Func::split_k(const Func &producer, const VarOrRVar &k, const Var &slice, int slices, SplitKMode mode) {
  return all_or_nothing({contents_, producer.contents()}, [&]() -> Func & {
    const internal::FuncContents &theirs = *producer.contents();
    FuncSchedule &mine = contents_->schedule;
    std::string request = str_cat("in schedule for '", name(), "': split_k(", producer.name(), ", ", k.name, ", ",
                                  slice.name(), ", ", slices, ")");
    if (slices < 1 || slices > kMaxSlices)
      user_error(request, ": the number of slices must be between 1 and ", kMaxSlices);
    if (mine.split_k.requested())
      user_error(request, ": '", name(), "' already splits the reduction of '", mine.split_k.producer, "' across ",
                 mine.split_k.slices, " blocks; a Func has one split_k");
    if (&theirs == contents_.get())
      user_error(request, ": split_k is called on '", name(), "' itself; call it on the Func that reads '", name(),
                 "' and fuses it at a block loop (for a GEMM, the output: out.fuse_epilogue(", name(),
                 ", <block loop>), then out.split_k(", name(), ", ", k.name, ", ", slice.name(), ", ", slices, "))");
    if (theirs.schedule.placement != Placement::At || theirs.schedule.at_func != name())
      user_error(request, ": '", producer.name(), "' must be fused into '", name(), "' first (", name(),
                 ".fuse_epilogue(", producer.name(), ", <block loop>)), so that each block holds an output tile of "
                 "partial sums and the epilogue has a tile to run on after the combine");
    if (theirs.updates.size() != 1)
      user_error(request, ": '", producer.name(), "' has ", theirs.updates.size(),
                 " update definitions; split_k splits a Func with one, the sum being split");
    const StageSchedule &update = theirs.schedule.stages[1];
    if (std::find(update.reduction_vars.begin(), update.reduction_vars.end(), k.name) == update.reduction_vars.end())
      user_error(request, ": '", k.name, "' is not a reduction variable of '", producer.name(), "' (update 0)");
    for (const Dim &dim : mine.stages.front().dims)
      if (dim.var == slice.name())
        user_error(request, ": '", slice.name(), "' is already a loop of '", name(), "'; choose a new name");
    for (const std::string &pure : contents_->pure_vars)
      if (pure == slice.name())
        user_error(request, ": '", slice.name(), "' is a pure variable of '", name(), "'; choose a new name");
    for (const StageSchedule &stage : theirs.schedule.stages)
      for (const Dim &dim : stage.dims)
        if (dim.var == slice.name())
          user_error(request, ": '", slice.name(), "' is already a loop of '", producer.name(),
                     "'; choose a new name");
    mine.split_k = SplitReduction{producer.name(), k.name, slice.name(), slices, mode, "", 0};
    return *this;
  });
}

Func &Func::split_k_tail(const Var &block_loop, int iterations) {
  return all_or_nothing({contents_}, [&]() -> Func & {
    SplitReduction &split = contents_->schedule.split_k;
    std::string request =
        str_cat("in schedule for '", name(), "': split_k_tail(", block_loop.name(), ", ", iterations, ")");
    if (!split.requested())
      user_error(request, ": '", name(),
                 "' splits no reduction yet; call split_k first, then split_k_tail to split "
                 "only the last tiles");
    if (iterations < 1)
      user_error(request, ": the iterations split must be at least 1 (the last one); without split_k_tail every "
                          "tile is split");
    const std::vector<Dim> &dims = contents_->schedule.stages.front().dims;
    auto dim = std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == block_loop.name(); });
    if (dim == dims.end())
      user_error(request, ": '", block_loop.name(), "' is not a loop of '", name(), "'");
    split.tail_loop = block_loop.name();
    split.tail_iterations = iterations;
    return *this;
  });
}

} // namespace coalesce
