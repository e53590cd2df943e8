#include "scheduler/CheckStaging.h"

#include "dsl/Error.h"
#include "scheduler/LoopNames.h"

#include <algorithm>

namespace coalesce {

namespace {

struct Where {
  std::string prefix; // "in schedule for ...: 'A' is staged with "
  template <typename... Parts> [[noreturn]] void fail(const Parts &...parts) const { user_error(prefix, parts...); }
};

// A pipeline's own values.
void check_values(const Where &w, const TileCopies &copies) {
  if (const auto *async = std::get_if<AsyncCopies>(&copies))
    if (async->stages < 2 || async->stages > 8)
      w.fail("AsyncCopies of ", async->stages, " stages; a pipeline of asynchronous copies has 2 to 8");
  const TmaCopies *tma = tma_copies(copies);
  if (!tma)
    return;
  if (tma->stages < 3 || tma->stages > 8)
    w.fail("TmaCopies of ", tma->stages, " stages; a TMA pipeline has 3 to 8 (its barriers need a slot being "
           "filled, one being read and one free)");
  if (!tma->producer)
    return;
  const ProducerWarps &p = *tma->producer;
  if (p.warps < 1 || p.warps > 4)
    w.fail("ProducerWarps{", p.warps, "}; producer warps are 1 to 4 (or none: the MMA warps' first thread issues "
           "the copies)");
  if (p.registers != 0 && (p.registers < 24 || p.registers > 256 || p.registers % 8 != 0))
    w.fail("ProducerWarps with ", p.registers, " registers; registers per thread after reallocation are a multiple "
           "of 8 from 24 to 256 (setmaxnreg), or 0 for none");
  if (p.registers != 0 && p.warps != 4)
    w.fail("ProducerWarps of ", p.warps, " warps keeping ", p.registers, " registers; registers are reallocated "
           "per warpgroup (setmaxnreg), so it takes 4 warps");
}

// What the pipeline needs of its stage and of the output.
void check_stage(const Where &w, const SharedStaging &staged, const StageSchedule &stage, const FuncContents &output,
                 const Environment &env) {
  const TileCopies &copies = staged.copies;
  if (!std::holds_alternative<OneBuffer>(copies)) {
    auto dim = std::find_if(stage.dims.begin(), stage.dims.end(), [&](const Dim &d) { return d.var == staged.at_loop; });
    if (dim != stage.dims.end() && dim->kind != ForKind::Serial)
      w.fail(describe(copies), " at '", staged.at_loop, "', which is ", for_kind_name(dim->kind),
             "; more than one buffer needs a serial loop, whose next iteration's tile is fetched during this one's");
  }
  const TmaCopies *tma = tma_copies(copies);
  if (!tma)
    return;
  if (!is_warpgroup_mma(stage.mma.kind))
    w.fail("TmaCopies, but the TMA copies only the 128-byte swizzled tiles that warpgroup MMAs read (mma() with a "
           "wgmma kind); use AsyncCopies for this stage");
  // The TMA copies a box as it lies in memory, bits unchanged; tf32's
  // operands must be rounded to tf32 and a K x N B stored transposed
  // (K-major), which the copy kernel of padded_copy does first.
  const char *where_ragged = tma->padded_copy == PaddedCopy::WhereRowsAreRagged
                                 ? " copied first only where its rows are ragged (PaddedCopy::WhereRowsAreRagged)"
                                 : "";
  if (mma_rounds_to_tf32(stage.mma.kind) && tma->padded_copy != PaddedCopy::Always)
    w.fail("TmaCopies", where_ragged, ", but ", mma_kind_name(stage.mma.kind),
           " multiplies the bits it finds in shared memory, which "
           "must be rounded to tf32 (and B K-major, transposed where B is stored K x N), and the TMA copies "
           "boxes as they lie; set TmaCopies::padded_copy to PaddedCopy::Always (a kernel of its own first copies '",
           staged.input, "' rounded, a K x N B transposed, for the TMA to read, on every launch), or use AsyncCopies");
  auto input = env.inputs.find(staged.input);
  if (tma->padded_copy != PaddedCopy::Never && input != env.inputs.end() && input->second->extents.size() != 2)
    w.fail("TmaCopies with ", padded_copy_name(tma->padded_copy),
           ", whose copy kernel pads the rows of a 2-D input, but '", staged.input, "' has ",
           input->second->extents.size(),
           " dimensions (a batch); use TmaCopies with PaddedCopy::Never (rows of whole "
           "16-byte vectors, cp.async copies elsewhere) or AsyncCopies");
  if (tma->multicast && output.schedule.cluster_blocks == 0)
    w.fail("TmaCopies::multicast, which shares its tiles between the blocks of a cluster, but '", output.name,
           "' runs no clusters; schedule gpu_cluster on it, or multicast = false");
}

} // namespace

void check_staging(const Environment &env) {
  const FuncContents &output = env.output();
  for (const FuncContents &func : env.funcs)
    for (size_t s = 0; s < func.schedule.stages.size(); ++s) {
      const StageSchedule &stage = func.schedule.stages[s];
      for (const SharedStaging &staged : stage.staged_inputs) {
        Where w{str_cat("in schedule for ", stage_description(func, s), ": '", staged.input, "' is staged with ")};
        check_values(w, staged.copies);
        check_stage(w, staged, stage, output, env);
      }
      // One pipeline per loop: its inputs share its copies and barriers.
      for (const SharedStaging &a : stage.staged_inputs)
        for (const SharedStaging &b : stage.staged_inputs)
          if (&a < &b && a.at_loop == b.at_loop && !same_pipeline(a.copies, b.copies))
            user_error("in schedule for ", stage_description(func, s), ": '", a.input, "' and '", b.input,
                       "' are staged at '", a.at_loop, "' and share its copies and barriers, so they need the same "
                       "pipeline; '", a.input, "' has ", describe(a.copies), ", '", b.input, "' has ",
                       describe(b.copies));
    }
}

} // namespace coalesce
