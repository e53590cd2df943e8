// gpu_thread_warps: maps a block's two thread loops to GPU threads, like
// gpu_threads, with the threads arranged into warps of a chosen shape. It
// records plain data through the ordinary primitives (split, reorder, fuse,
// gpu_threads), so the loop nest shows the loops it made.

#include "dsl/AllOrNothing.h"
#include "dsl/Error.h"
#include "dsl/Func.h"

#include <algorithm>

namespace coalesce {

std::string warp_layout_error(int rows, int columns, int warp_rows, int warp_columns) {
  // The hardware forms warps of 32 consecutive linear thread indices; the
  // layout below is a bijection of the block's threads exactly when the
  // warp tile has 32 threads and tiles the rows x columns grid.
  if (warp_rows <= 0 || warp_columns <= 0 || warp_rows * warp_columns != kWarpSize)
    return str_cat("a warp of ", warp_rows, "x", warp_columns, " threads; a warp has ", kWarpSize,
                   " threads: warp_rows * warp_columns must be 32 (1x32, 2x16, 4x8, 8x4, 16x2 or 32x1)");
  if (rows % warp_rows || columns % warp_columns)
    return str_cat("warps of ", warp_rows, "x", warp_columns, " threads do not tile the ", rows, "x", columns,
                   " threads of the block, so some threads would have no place or share one; choose a warp shape "
                   "whose rows divide ",
                   rows, " and whose columns divide ", columns);
  return "";
}

Stage &Stage::gpu_thread_warps(const Var &y, const Var &x, int warp_rows, int warp_columns, const Var &warp,
                               const Var &lane) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    size_t dy = find_dim(y.name(), "gpu_thread_warps"), dx = find_dim(x.name(), "gpu_thread_warps");
    if (dy + 1 != dx)
      user_error("in schedule for ", describe(), ": gpu_thread_warps(", y.name(), ", ", x.name(), "): '", y.name(),
                 "' must be the loop directly outside '", x.name(), "'; reorder them first");
    int rows = constant_extent(stage, y.name()), columns = constant_extent(stage, x.name());
    if (rows == 0 || columns == 0)
      user_error("in schedule for ", describe(), ": gpu_thread_warps(", y.name(), ", ", x.name(),
                 ") needs both loops to come from splits by constants (the thread loops of a block tile), so that "
                 "the block's threads are known");
    std::string why = warp_layout_error(rows, columns, warp_rows, warp_columns);
    if (!why.empty())
      user_error("in schedule for ", describe(), ": gpu_thread_warps(", y.name(), ", ", x.name(), ", ", warp_rows,
                 ", ", warp_columns, "): ", why);
    for (const Dim &dim : stage.dims)
      if (dim.kind == ForKind::GpuThread)
        user_error("in schedule for ", describe(), ": gpu_thread_warps maps its own loops to GPU threads, but '",
                   dim.var, "' is already mapped; leave thread mapping to gpu_thread_warps");
    std::vector<std::string> names = {warp.name(), lane.name(), y.name() + "_warp", x.name() + "_warp",
                                      y.name() + "_lane", x.name() + "_lane"};
    for (size_t n = 0; n < names.size(); ++n) {
      check_new_name(names[n], "gpu_thread_warps");
      if (std::count(names.begin(), names.end(), names[n]) > 1)
        user_error("in schedule for ", describe(), ": gpu_thread_warps names two loops '", names[n], "'");
    }
    // y = y_warp * warp_rows + y_lane, x = x_warp * warp_columns + x_lane;
    // lane = y_lane * warp_columns + x_lane and warp = y_warp * (columns /
    // warp_columns) + x_warp, so the 32 threads of a warp are one
    // warp_rows x warp_columns tile of the grid.
    Var yw(names[2]), xw(names[3]), yl(names[4]), xl(names[5]);
    split(y, yw, yl, warp_rows).split(x, xw, xl, warp_columns);
    reorder({yw, xw, yl, xl});
    fuse(xl, yl, lane).fuse(xw, yw, warp);
    return gpu_threads({warp, lane});
  });
}

Func &Func::gpu_thread_warps(const Var &y, const Var &x, int warp_rows, int warp_columns, const Var &warp,
                             const Var &lane) {
  pure().gpu_thread_warps(y, x, warp_rows, warp_columns, warp, lane);
  return *this;
}

} // namespace coalesce
