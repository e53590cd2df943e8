// The schedule primitives for warp-level tensor cores: fuse (which the
// fragment layout needs, two loops becoming one thread dimension), mma_tile
// on the consumer and mma on the reduction. Each records plain data through
// the ordinary primitives (split, reorder, fuse, gpu_threads, unroll), so
// the loop nest shows every loop it made.

#include "dsl/AllOrNothing.h"
#include "dsl/Error.h"
#include "dsl/Func.h"

#include <algorithm>

namespace coalesce {

int constant_extent(const StageSchedule &stage, const std::string &var) {
  for (const Split &split : stage.splits) {
    if (split.is_fuse && split.old_var == var) {
      int outer = constant_extent(stage, split.outer);
      return outer ? outer * split.factor : 0;
    }
    if (!split.is_fuse && split.inner == var)
      return split.factor;
    if (!split.is_fuse && split.outer == var) {
      int old = constant_extent(stage, split.old_var);
      return old ? (old + split.factor - 1) / split.factor : 0;
    }
  }
  return 0;
}

Stage &Stage::fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    size_t i = find_dim(inner.name, "fuse");
    size_t o = find_dim(outer.name, "fuse");
    if (o + 1 != i)
      user_error("in schedule for ", describe(), ": fuse(", inner.name, ", ", outer.name, ", ", fused.name, "): '",
                 outer.name, "' must be the loop directly outside '", inner.name, "'; reorder them first");
    const Dim &inner_dim = stage.dims[i], &outer_dim = stage.dims[o];
    if (inner_dim.is_rvar || outer_dim.is_rvar)
      user_error("in schedule for ", describe(), ": fuse of reduction loop '",
                 inner_dim.is_rvar ? inner.name : outer.name, "'; only pure loops can be fused");
    if (inner_dim.kind != ForKind::Serial || outer_dim.kind != ForKind::Serial)
      user_error("in schedule for ", describe(), ": fuse of '", inner.name, "' and '", outer.name,
                 "', one of which is already mapped or unrolled; fuse first, then map the fused loop");
    int factor = constant_extent(stage, inner.name);
    if (factor == 0)
      user_error("in schedule for ", describe(), ": fuse(", inner.name, ", ", outer.name, ", ", fused.name, "): '",
                 inner.name, "' must come from splits by constants, so that its extent is a known constant");
    check_new_name(fused.name, "fuse");
    Dim fused_dim = outer_dim;
    fused_dim.var = fused.name;
    stage.dims.erase(stage.dims.begin() + static_cast<long>(i));
    stage.dims[o] = fused_dim;
    stage.splits.push_back(Split{fused.name, outer.name, inner.name, factor, false, true});
    return *this;
  });
}

namespace {

// The constant extent of a loop made by a split of this stage, or 0.
int split_factor(const StageSchedule &stage, const std::string &var) {
  for (const Split &split : stage.splits)
    if (!split.is_fuse && split.inner == var)
      return split.factor;
  return 0;
}

// The Func's dimensions (indices into `pure_vars`) that loop `var` of the
// stage walks: its own if it is a pure variable, else those of the loop a
// split made it from, or of both loops a fuse made it of.
std::vector<int> dims_walked(const StageSchedule &stage, const std::vector<std::string> &pure_vars,
                             const std::string &var) {
  auto pure = std::find(pure_vars.begin(), pure_vars.end(), var);
  if (pure != pure_vars.end())
    return {static_cast<int>(pure - pure_vars.begin())};
  std::vector<int> dims;
  for (const Split &split : stage.splits) {
    std::vector<std::string> sources;
    if (split.is_fuse && split.old_var == var)
      sources = {split.outer, split.inner};
    else if (!split.is_fuse && (split.outer == var || split.inner == var))
      sources = {split.old_var};
    for (const std::string &source : sources)
      for (int d : dims_walked(stage, pure_vars, source))
        if (std::find(dims.begin(), dims.end(), d) == dims.end())
          dims.push_back(d);
    if (!sources.empty())
      break;
  }
  return dims;
}

} // namespace

Stage &Stage::mma_tile(const Var &x, const Var &y, MmaKind kind, int warp_m, int warp_n, const Var &warp,
                       const Var &lane, const Var &mma_i, const Var &mma_j, const Var &frag_i, const Var &frag_j) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    // The checks come first, so most mistakes are found before anything
    // changes; all_or_nothing restores the schedule if one of the primitives
    // below (split, fuse, gpu_threads, unroll) still rejects its step.
    StageSchedule &stage = schedule();
    if (index_ != 0)
      user_error("in schedule for ", describe(), ": mma_tile lays out the tile a consumer stores; apply it to the "
                 "pure definition of the Func that reads the accumulator (the epilogue)");
    if (kind == MmaKind::None)
      user_error("in schedule for ", describe(), ": mma_tile needs an instruction kind");
    if (stage.mma_layout.kind != MmaKind::None)
      user_error("in schedule for ", describe(), ": mma_tile is already applied");
    size_t dx = find_dim(x.name(), "mma_tile"), dy = find_dim(y.name(), "mma_tile");
    if (dx + 1 != dy)
      user_error("in schedule for ", describe(), ": mma_tile(", x.name(), ", ", y.name(), "): '", x.name(),
                 "' must be the loop directly outside '", y.name(), "' (as tile() leaves them)");
    // The instruction's rows and columns: one of the Func's two dimensions
    // each, either way round (rows along j is swap-AB: B's rows fill the
    // instruction's M). The operands follow from it (check_mma).
    const std::vector<std::string> &pure_vars = func_->pure_vars;
    std::vector<int> rows = dims_walked(stage, pure_vars, x.name()), columns = dims_walked(stage, pure_vars, y.name());
    if (rows.size() != 1 || columns.size() != 1 || rows[0] == columns[0])
      user_error("in schedule for ", describe(), ": mma_tile(", x.name(), ", ", y.name(), "): the tile's rows and ",
                 "columns must each run along one dimension of '", func_->name, "', a different one each; '", x.name(),
                 "' and '", y.name(), "' walk ",
                 rows.size() == 1 && columns.size() == 1
                     ? str_cat("both along '", pure_vars[static_cast<size_t>(rows[0])], "'")
                     : std::string("a loop made of several (a fuse)"));
    int tile_m = split_factor(stage, x.name()), tile_n = split_factor(stage, y.name());
    if (tile_m == 0 || tile_n == 0)
      user_error("in schedule for ", describe(), ": mma_tile(", x.name(), ", ", y.name(),
                 ") needs both loops to be the inner loops of splits (a block tile), so their extents are constants");
    int im = mma_m(kind), in = mma_n(kind);
    // A warpgroup MMA's tile is 64 x warp_n for 4 warps together; each warp
    // holds 16 rows of it, in the same fragment layout as a warp MMA's, so
    // below it is split like a warp tile of 16 x warp_n.
    bool group = is_warpgroup_mma(kind);
    // N a multiple of 8 here; check_mma asks for 64 where the instruction's
    // second operand is staged MN-major (its swizzled atoms are 64 columns
    // wide) or has not run narrower on a GPU.
    // Two instructions' rows per warpgroup (128 x N, N up to 128) are the
    // same registers' worth as one 64 x 2N tile.
    const bool two_row_blocks = group && warp_m == 2 * kWarpgroupMmaRows && warp_n <= kWarpgroupMmaMaxColumns / 2;
    if (group && !two_row_blocks &&
        (warp_m != kWarpgroupMmaRows || warp_n <= 0 || warp_n % 8 || warp_n > kWarpgroupMmaMaxColumns))
      user_error(
          "in schedule for ", describe(), ": mma_tile with a ", warp_m, " x ", warp_n, " tile; ", mma_kind_name(kind),
          " computes a 64 x N tile per warpgroup (4 warps), N a multiple of 8 up to 256 ",
          "(of 64 unless its second operand is stored K-major), or two instructions' rows, 128 x N with N up to ",
          kWarpgroupMmaMaxColumns / 2, ": pass 64 or 128 and N as the tile's rows and columns");
    if (group && tile_m % kWarpgroupMmaRows)
      user_error("in schedule for ", describe(), ": mma_tile of a ", tile_m, "-row tile with ", mma_kind_name(kind),
                 "; a warpgroup covers 64 rows, so the tile's rows must be a multiple of 64");
    int rows_per_warp = group ? im : warp_m;
    if (warp_m <= 0 || warp_n <= 0 || warp_m % im || warp_n % in)
      user_error("in schedule for ", describe(), ": mma_tile with a ", warp_m, " x ", warp_n, " warp tile; ",
                 mma_kind_name(kind), " needs a warp tile that is a positive multiple of ", im, " x ", in);
    if (tile_m % warp_m || tile_n % warp_n)
      user_error("in schedule for ", describe(), ": mma_tile with a ", warp_m, " x ", warp_n,
                 " warp tile does not divide the ", tile_m, " x ", tile_n, " tile of '", x.name(), "' and '", y.name(),
                 "'; choose a warp tile that divides it");
    int warps = (tile_m / (two_row_blocks ? 2 * rows_per_warp : rows_per_warp)) * (tile_n / warp_n);
    if (warps * 32 > 1024)
      user_error("in schedule for ", describe(), ": mma_tile makes ", warps, " warps (", warps * 32,
                 " threads) per block; at most 32 warps fit in a block: use a larger warp tile");
    for (const Dim &dim : stage.dims)
      if (dim.kind == ForKind::GpuThread)
        user_error("in schedule for ", describe(), ": mma_tile maps its own loops to GPU threads, but '", dim.var,
                   "' is already mapped; leave thread mapping to mma_tile");
    std::vector<std::string> names = {warp.name(), lane.name(), mma_i.name(), mma_j.name(), frag_i.name(),
                                      frag_j.name()};
    std::vector<std::string> helpers = {lane.name() + "_row", lane.name() + "_col", warp.name() + "_i",
                                        warp.name() + "_j",   x.name() + "_in_warp", y.name() + "_in_warp",
                                        x.name() + "_in_mma", y.name() + "_in_mma"};
    std::vector<std::string> all = names;
    all.insert(all.end(), helpers.begin(), helpers.end());
    for (size_t n = 0; n < all.size(); ++n) {
      check_new_name(all[n], "mma_tile");
      if (std::count(all.begin(), all.end(), all[n]) > 1)
        user_error("in schedule for ", describe(), ": mma_tile names two loops '", all[n], "'");
    }

    auto name = [](const std::string &n) { return Var(n); };
    Var wi = name(helpers[2]), wj = name(helpers[3]), xw = name(helpers[4]), yw = name(helpers[5]);
    Var xm = name(helpers[6]), ym = name(helpers[7]), lr = name(helpers[0]), lc = name(helpers[1]);
    // x = wi * warp_m + mma_i * 16 + frag_i * 8 + lane_row, y likewise with
    // lane_col * 2 + frag_j: lane = lane_row * 4 + lane_col owns rows
    // lane / 4 (+ 8) and columns 2 (lane % 4) (+ 1) of each instruction tile.
    if (two_row_blocks) {
      // x = group * 128 + mma_i * 64 + quarter * 16 + frag_i * 8 +
      // lane_row: each warp of a warpgroup holds 16 rows of each of the two
      // instructions' 64 (warp = wj * (tile_m / 32) + group * 4 + quarter).
      Var group_i = name(x.name() + "_group"), in_group = name(x.name() + "_in_group");
      Var quarter = name(warp.name() + "_quarter"), in_quarter = name(x.name() + "_in_quarter");
      Var wq = name(warp.name() + "_gq");
      split(x, group_i, in_group, warp_m).split(y, wj, yw, warp_n);
      split(in_group, mma_i, xw, kWarpgroupMmaRows).split(yw, mma_j, ym, in);
      split(xw, quarter, in_quarter, im);
      split(in_quarter, frag_i, lr, 8).split(ym, lc, frag_j, 2);
      reorder({wj, group_i, quarter, lr, lc, mma_i, mma_j, frag_i, frag_j});
      fuse(lc, lr, lane).fuse(quarter, group_i, wq).fuse(wq, wj, warp);
      gpu_threads({warp, lane});
      unroll(mma_i).unroll(mma_j).unroll(frag_i).unroll(frag_j);
      StageSchedule &after = schedule();
      after.mma_layout = MmaLayout{kind,
                                   warp.name(),
                                   lane.name(),
                                   mma_i.name(),
                                   mma_j.name(),
                                   frag_i.name(),
                                   frag_j.name(),
                                   rows_per_warp,
                                   warp_n,
                                   tile_m / (2 * rows_per_warp),
                                   tile_n / warp_n,
                                   rows[0],
                                   columns[0]};
      return *this;
    }
    split(x, wi, xw, rows_per_warp).split(y, wj, yw, warp_n);
    split(xw, mma_i, xm, im).split(yw, mma_j, ym, in);
    split(xm, frag_i, lr, 8).split(ym, lc, frag_j, 2);
    if (group) {
      // warp = wj * (tile_m / 16) + wi: the 4 warps of a warpgroup
      // (warp / 4) are consecutive 16-row strips of the same columns.
      reorder({wj, wi, lr, lc, mma_i, mma_j, frag_i, frag_j});
      fuse(lc, lr, lane).fuse(wi, wj, warp);
    } else {
      reorder({wi, wj, lr, lc, mma_i, mma_j, frag_i, frag_j});
      fuse(lc, lr, lane).fuse(wj, wi, warp);
    }
    gpu_threads({warp, lane});
    unroll(mma_i).unroll(mma_j).unroll(frag_i).unroll(frag_j);
    StageSchedule &after = schedule();
    after.mma_layout =
        MmaLayout{kind,          warp.name(),   lane.name(), mma_i.name(),           mma_j.name(),    frag_i.name(),
                  frag_j.name(), rows_per_warp, warp_n,      tile_m / rows_per_warp, tile_n / warp_n, rows[0],
                  columns[0]};
    return *this;
  });
}

Stage &Stage::mma(const RVar &k, const RVar &ko, const RVar &kk, int k_step) {
  return all_or_nothing({func_}, [&]() -> Stage & {
    StageSchedule &stage = schedule();
    const MmaLayout &layout = stage.mma_layout;
    if (index_ == 0)
      user_error("in schedule for ", describe(), ": mma maps a reduction; apply it to the update (",
                 func_->name, ".update())");
    if (layout.kind == MmaKind::None)
      user_error("in schedule for ", describe(), ": mma needs '", func_->name,
                 "' computed on a consumer tile laid out by mma_tile (consumer.mma_tile(...), then "
                 "consumer.fuse_epilogue(", func_->name, ", block loop))");
    if (stage.mma.kind != MmaKind::None)
      user_error("in schedule for ", describe(), ": mma is already applied");
    size_t d = find_dim(k.name(), "mma");
    if (!stage.dims[d].is_rvar)
      user_error("in schedule for ", describe(), ": mma of '", k.name(), "', which is not a reduction loop");
    int depth = mma_k(layout.kind);
    // A warpgroup MMA reads its operands from 128-byte swizzled shared
    // tiles: the staged k extent must be whole 128-byte rows of A (64
    // 16-bit, 32 f32 or 128 8-bit elements).
    int row_elements = 128 / mma_instruction(layout.kind).operand.bytes();
    if (is_warpgroup_mma(layout.kind) && (k_step <= 0 || k_step % row_elements))
      user_error("in schedule for ", describe(), ": mma with k step ", k_step, "; ", mma_kind_name(layout.kind),
                 " reads A from 128-byte swizzled rows of ", row_elements,
                 " elements, so the k step must be a positive multiple of ", row_elements);
    if (k_step <= 0 || k_step % depth)
      user_error("in schedule for ", describe(), ": mma with k step ", k_step, "; ", mma_kind_name(layout.kind),
                 " needs a k step that is a positive multiple of ", depth);
    std::string k_in = ko.name() + "_in", kt = kk.name() + "_in";
    for (const std::string &n : {ko.name(), kk.name(), k_in, kt})
      check_new_name(n, "mma");
    split(k, ko, RVar(k_in), k_step);
    split(RVar(k_in), kk, RVar(kt), depth);
    reorder({ko, Var(layout.warp), Var(layout.lane), kk, Var(layout.mma_i), Var(layout.mma_j), Var(layout.frag_i),
             Var(layout.frag_j), RVar(kt)});
    unroll(kk);
    schedule().mma = MmaRequest{layout.kind, kt};
    return *this;
  });
}

Func &Func::fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused) {
  pure().fuse(inner, outer, fused);
  return *this;
}

Func &Func::mma_tile(const Var &x, const Var &y, MmaKind kind, int warp_m, int warp_n, const Var &warp,
                     const Var &lane, const Var &mma_i, const Var &mma_j, const Var &frag_i, const Var &frag_j) {
  pure().mma_tile(x, y, kind, warp_m, warp_n, warp, lane, mma_i, mma_j, frag_i, frag_j);
  return *this;
}

} // namespace coalesce
