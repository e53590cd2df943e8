#include "dsl/recipes/GemmSchedule.h"

#include "dsl/Error.h"
#include "dsl/recipes/GemmBatch.h"

#include <algorithm>

namespace coalesce {

std::string GemmTiling::str() const {
  return str_cat(block_m, "x", block_n, " tile, ", threads_m, "x", threads_n, " threads, ", register_m(), "x",
                 register_n(), " registers, k step ", k_step,
                 stages > 2    ? str_cat(", ", stages, " stages")
                 : stages == 2 ? std::string(", double buffered")
                               : "",
                 warp_rows ? str_cat(", warps of ", warp_rows, "x", warp_cols, " threads") : std::string(),
                 block_group_rows ? str_cat(", blocks in groups of ", block_group_rows, " rows") : std::string(),
                 split_k > 1 ? str_cat(", K split ", split_k, " ways (", split_k_mode_name(split_k_mode), ")")
                             : std::string(),
                 zero_fill && async_copy && stages >= 2 ? ", zero-filled copies" : "");
}

GemmTiling small_m_tiling(int rows) {
  if (rows != 16 && rows != 32 && rows != 64)
    user_error("small_m_tiling(", rows, "): a small-M tile has 16, 32 or 64 rows");
  GemmTiling t;
  t.block_m = rows;
  t.threads_m = rows / 4;
  t.block_n = 128;
  t.threads_n = 16;
  return t;
}

int split_k_blocks_per_sm(int threads) { return std::clamp(512 / std::max(threads, 1), 2, 8); }

int default_split_k(int64_t tiles, int64_t K, int k_step, int sm_count, int blocks_per_sm) {
  int64_t target = int64_t{std::max(blocks_per_sm, 1)} * sm_count;
  // Nine in ten slots filled is one wave already: a split would run the
  // same depth in two (H200, bf16 4096 x 1024 x 4096 on 128 tiles of
  // 128 x 256: 0.109 ms at 128 x 128 split 2 ways, 0.057 unsplit).
  if (tiles <= 0 || K < kMinSplitDepth || tiles * 10 >= target * 9)
    return 1;
  int64_t wanted = (target + tiles - 1) / tiles;
  int64_t deep_enough = std::max<int64_t>(K / std::max(kMinSliceDepth, k_step), 1);
  return static_cast<int>(std::min<int64_t>({wanted, deep_enough, kMaxDefaultSlices}));
}

namespace {

GemmTiling tile_for_shape(int64_t M, int64_t N, int sm_count) {
  GemmTiling large;
  if (M <= 0 || N <= 0)
    return large;
  // Decode-like shapes: a 128-row tile would leave most of its rows (and
  // registers) empty.
  if (M <= 64)
    return small_m_tiling(M <= 16 ? 16 : M <= 32 ? 32 : 64);
  auto blocks = [&](int bm, int bn) { return ((M + bm - 1) / bm) * ((N + bn - 1) / bn); };
  // Two resident blocks per multiprocessor is what the large tile's
  // registers allow; below one full wave, halve the tile.
  if (blocks(128, 128) >= sm_count)
    return large;
  GemmTiling medium = large;
  medium.block_n = 64;
  medium.threads_n = 8;
  if (blocks(128, 64) >= sm_count)
    return medium;
  GemmTiling small = medium;
  small.block_m = 64;
  small.threads_m = 8;
  return small;
}

} // namespace

GemmTiling default_gemm_tiling(int64_t M, int64_t N, int64_t K, int sm_count) {
  GemmTiling t = tile_for_shape(M, N, sm_count);
  if (M > 0 && N > 0) {
    int64_t tiles = ((M + t.block_m - 1) / t.block_m) * ((N + t.block_n - 1) / t.block_n);
    t.split_k = default_split_k(tiles, K, t.k_step, sm_count, split_k_blocks_per_sm(t.threads_m * t.threads_n));
  }
  return t;
}

void schedule_gemm(Func out, Func acc, const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k,
                   const GemmTiling &t) {
  if (t.block_m % t.threads_m || t.block_n % t.threads_n)
    user_error("GEMM tiling ", t.str(), ": the block tile must be a multiple of the thread tile");
  if (t.stages < 1 || t.stages > 8)
    user_error("GEMM tiling ", t.str(), ": ", t.stages, " stages; the staging has 1 to 8 (1: one tile per K step, 2: ",
               "double buffered, 3 or more: a pipeline)");
  if (t.stages > 2 && !t.async_copy)
    user_error("GEMM tiling ", t.str(), ": ", t.stages, " stages without async_copy; only asynchronous copies can have ",
               "more than one K step in flight: use async_copy or at most 2 stages");
  if ((t.warp_rows == 0) != (t.warp_cols == 0))
    user_error("GEMM tiling ", t.str(), ": a warp layout of ", t.warp_rows, "x", t.warp_cols,
               "; give both warp_rows and warp_cols, or neither (0 x 0: linear order)");
  // out(b, i, j): a batch of products, the batch the outermost block
  // dimension. Its products are not split: the batch's blocks fill the
  // grid already (as the tensor-core recipe's batches).
  std::vector<VarOrRVar> blocks = gemm_batch_vars(out, i, "schedule_gemm");
  if (!blocks.empty() && t.split_k > 1)
    user_error("schedule_gemm: '", out.name(), "' is a batch of products (its dimension '", blocks[0].name,
               "') and the tiling ", t.str(), " splits K; a batch's products are not split: use split_k = 1");
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  blocks.push_back(bi);
  blocks.push_back(bj);
  out.tile(i, j, bi, bj, ii, jj, t.block_m, t.block_n).gpu_blocks(blocks);
  // Each thread owns register_m x register_n outputs. With 8 per direction
  // they are two groups of 4, half a tile apart: thread t reads elements
  // 4t..4t+3 of each half, so a warp reads consecutive 16-byte vectors.
  auto thread_split = [&](const Var &whole, const Var &thread, const Var &reg, const Var &half, const Var &rest,
                          int block, int threads) {
    int per_thread = block / threads;
    if (per_thread >= 8 && per_thread % 2 == 0) {
      out.split(whole, half, rest, block / 2).split(rest, thread, reg, per_thread / 2);
      return true;
    }
    out.split(whole, thread, reg, per_thread);
    return false;
  };
  Var hi("hi"), hj("hj"), iir("iir"), jjr("jjr");
  bool halves_i = thread_split(ii, ti, ri, hi, iir, t.block_m, t.threads_m);
  bool halves_j = thread_split(jj, tj, rj, hj, jjr, t.block_n, t.threads_n);
  std::vector<VarOrRVar> order = {ti, tj};
  if (halves_i)
    order.push_back(hi);
  order.push_back(ri);
  if (halves_j)
    order.push_back(hj);
  order.push_back(rj);
  out.reorder(order);
  // The thread loops, in row order (tj fastest) or in warps of
  // warp_rows x warp_cols threads.
  Var warp("warp"), lane("lane");
  std::vector<VarOrRVar> thread_loops = {ti, tj};
  if (t.warp_rows > 0) {
    std::string why = warp_layout_error(t.threads_m, t.threads_n, t.warp_rows, t.warp_cols);
    if (!why.empty())
      user_error("GEMM tiling ", t.str(), ": ", why);
    out.gpu_thread_warps(ti, tj, t.warp_rows, t.warp_cols, warp, lane);
    thread_loops = {warp, lane};
  } else {
    out.gpu_threads({ti, tj});
  }
  out.unroll(ri).unroll(rj);
  if (halves_i)
    out.unroll(hi);
  if (halves_j)
    out.unroll(hj);
  out.fuse_epilogue(acc, bj);
  if (t.split_k > 1)
    out.split_k(acc, k, Var("kz"), t.split_k, t.split_k_mode);
  // 256 threads with an 8x8 block want about 128 registers each: ask for two
  // blocks per SM, or a few registers more would leave room for only one.
  if (t.threads_m * t.threads_n >= 256)
    out.gpu_min_blocks_per_sm(2);
  // At that cap, 8x8 blocks keep their epilogue guarded: its unguarded copy
  // spills 12 bytes on sm_80 and was no faster on the H200 (128x128 tiles
  // at 4096^3: 3.079 ms against 3.078). Smaller register blocks take it
  // (64x64 tiles at 1024^3: 0.087 ms against 0.091).
  if (t.threads_m * t.threads_n >= 256 && t.register_m() * t.register_n() >= 64)
    out.partition_full_tiles(false);
  if (t.block_group_rows > 0)
    out.gpu_block_groups(t.block_group_rows);

  SharedLayout a_layout{true, t.a_padding}, b_layout;
  TileCopies copies = OneBuffer{};
  if (t.stages >= 2)
    copies = t.async_copy ? TileCopies(AsyncCopies{t.stages, t.zero_fill}) : TileCopies(RegisterDoubleBuffer{});
  RVar ko("ko"), ki("ki");
  std::vector<VarOrRVar> update_order = {ko, thread_loops[0], thread_loops[1], ki};
  update_order.insert(update_order.end(), order.begin() + 2, order.end());
  if (t.split_k > 1)
    acc.update().allow_reassociation(); // the slices are summed apart, then in slice order
  acc.update()
      .split(k, ko, ki, t.k_step)
      .reorder(update_order)
      .unroll(ki)
      .stage_in_shared(A, ko, a_layout, copies)
      .stage_in_shared(B, ko, b_layout, copies);
}

} // namespace coalesce
