#include "dsl/recipes/GemmMmaSchedule.h"

#include "dsl/Error.h"
#include "dsl/FuncContents.h"
#include "dsl/IRVisitor.h"
#include "dsl/recipes/GemmBatch.h"
#include "dsl/recipes/GemmSchedule.h"

#include <algorithm>
#include <iterator>

namespace coalesce {

const char *padded_copies_name(PaddedCopies copies) {
  switch (copies) {
  case PaddedCopies::None: return "none";
  case PaddedCopies::A: return "a";
  case PaddedCopies::B: return "b";
  case PaddedCopies::Both: return "both";
  case PaddedCopies::WhereRagged: return "where-ragged";
  }
  return "?";
}

bool copies_operand(PaddedCopies copies, bool b) {
  switch (copies) {
  case PaddedCopies::None: return false;
  case PaddedCopies::A: return !b;
  case PaddedCopies::B: return b;
  case PaddedCopies::Both: return true;
  case PaddedCopies::WhereRagged: return false;
  }
  return false;
}

std::string MmaTiling::str() const {
  return str_cat(
      mma_kind_name(kind), ", ", block_m, "x", block_n, " tile, ", warp_m, "x", warp_n,
      is_warpgroup_mma(kind) ? " per warpgroup (" : " per warp (", warps(), " warps)",
      swap_ab ? ", rows along N (swap-AB)" : "", ", k step ", k_step,
      stages > 2        ? str_cat(", ", stages, " stages")
      : double_buffered ? std::string(", double buffered")
                        : "",
      min_blocks_per_sm ? str_cat(", ", min_blocks_per_sm, " blocks per SM") : std::string(),
      groups_blocks() ? str_cat(", blocks in groups of ", block_group_rows, " rows") : std::string(),
      persistent_blocks ? str_cat(", a persistent grid of ", persistent_blocks, " blocks") : std::string(),
      uses_tma() ? ", TMA copies" : "",
      uses_tma() && producer_warps
          ? str_cat(" issued by ", producer_warps, " producer warp", producer_warps > 1 ? "s" : "")
          : std::string(),
      uses_tma() && producer_registers ? str_cat(" keeping ", producer_registers, " registers") : std::string(),
      consumer_schedule == ConsumerSchedule::PingPong ? ", two groups of MMA warps taking the tiles in turn (ping-pong)"
                                                      : "",
      uses_tma() && cluster_blocks > 1 ? str_cat(", clusters of ", cluster_blocks, " block rows sharing B's tiles")
                                       : std::string(),
      !uses_tma() || tma_padded_copies == PaddedCopies::None ? ""
      : mma_rounds_to_tf32(kind)                             ? ", from copies of A and B rounded to tf32, B transposed"
      : tma_padded_copies == PaddedCopies::Both              ? ", from copies of A and B with padded rows"
      : tma_padded_copies == PaddedCopies::WhereRagged
          ? ", from copies of A and B with padded rows where their rows are ragged"
      : tma_padded_copies == PaddedCopies::A ? ", from a copy of A with padded rows"
                                             : ", from a copy of B with padded rows",
      uses_tma() && tma_padded_copies == PaddedCopies::None && mma_truncates_to_tf32(kind)
          ? ", A and B as they lie (a B stored K x N from a transposed copy)"
          : "",
      tile_stores == TileStores::ThroughShared       ? ", tiles stored through shared memory"
      : tile_stores == TileStores::SumsThroughShared ? ", sums through shared memory, the epilogue in the copy"
                                                     : "",
      split_k > 1 ? str_cat(", K split ", split_k, " ways (", split_k_mode_name(split_k_mode), ")") : std::string(),
      split_k > 1 && split_k_tail_rows > 0 ? str_cat(" in the last ", split_k_tail_rows, " block row",
                                                     split_k_tail_rows > 1 ? "s" : "", ", the others whole")
                                           : std::string());
}

namespace {

struct Tile {
  int block_m, block_n, warp_m, warp_n, min_blocks;
  /// Warpgroup tiles: pipeline stages, and whether a 16-bit output's tile
  /// is stored through shared memory.
  int stages = 3;
  bool stores_through_shared = false;
};

// The blocks of `batch` products of M x N in tiles `t`.
int64_t tile_count(const Tile &t, int64_t M, int64_t N, int64_t batch = 1) {
  return batch * ((M + t.block_m - 1) / t.block_m) * ((N + t.block_n - 1) / t.block_n);
}

// The first (largest) of `tiles` whose blocks fill nine in ten of the
// multiprocessors' slots (min_blocks per multiprocessor: 4096 x 1024 in
// 128 x 256 tiles is 128 blocks on 132 slots), skipping 128-row tiles when
// M fits in 64 rows; the last where none does, and the first for an
// unknown shape (M or N <= 0). On the H200 (coalesce-bench, bf16 GEMM +
// bias + GELU): 2048^3 0.0400 -> 0.0329 ms, 4096 x 1024 x 4096 0.109 ->
// 0.057 against the rule of a block on every multiprocessor (128 x 128
// tiles there, split 2 ways at 4096 x 1024); counting one slot per
// multiprocessor made 1024^3's tile 128 x 64, 0.0156 -> 0.0162 ms. So
// 128 x 128 (two per SM) is no default's now: 128 x 256 fills nine in ten
// SMs wherever it would fill nine in ten of twice as many slots. A batch
// counts the blocks of all its products.
template <size_t Count>
const Tile &first_filling(const Tile (&tiles)[Count], int64_t M, int64_t N, int sm_count, int64_t batch = 1) {
  for (const Tile &t : tiles) {
    if (t.block_m > 64 && M > 0 && M <= 64)
      continue;
    if (M <= 0 || N <= 0 || tile_count(t, M, N, batch) * 10 >= int64_t{t.min_blocks} * sm_count * 9)
      return t;
  }
  return tiles[Count - 1];
}

// `pick`'s block and warp tiles, blocks per SM and stages into `tiling`.
void take_tile(MmaTiling &tiling, const Tile &pick) {
  tiling.block_m = pick.block_m;
  tiling.block_n = pick.block_n;
  tiling.warp_m = pick.warp_m;
  tiling.warp_n = pick.warp_n;
  tiling.min_blocks_per_sm = pick.min_blocks;
  tiling.stages = pick.stages;
}

MmaTiling tiling_of(const Tile &pick, MmaKind kind) {
  MmaTiling tiling;
  tiling.kind = kind;
  take_tile(tiling, pick);
  return tiling;
}

// Where 128 x 256 tiles (one block per SM) fill the GPU, a narrower tile
// whose last wave is fuller can finish first: the time is about the waves
// (ceil(tiles / SMs)) times a wave's time, which per block relative to
// 128 x 256 measured on the H200 (coalesce-main's tuner, bf16, against the
// waves of each shape) 0.77 for 128 x 192 (0.75 of the area) and 0.57 for
// 128 x 128 (0.5), both at four stages with the tile stored through
// shared memory. A narrower tile is taken where it is at least 5% cheaper
// by that count (5000 x 3000 x 2000, 3.7% by the count, was 2.5% slower):
// 3072^3 0.120 -> 0.092 ms (128 x 192), 2048 x 5120 x 5120 0.181 -> 0.171
// (128 x 128), 1536 x 8960 x 1536 0.098 (0.094 at 128 x 192, 3.3% by the
// count: kept); 4096^3, 8192^3, 2048^3 and 4096 x 1024 x 4096 keep 128 x 256.
const Tile &fewest_waves(const Tile &wide, int64_t M, int64_t N, int sm_count, int64_t batch) {
  static const Tile narrower[] = {{128, 192, 64, 192, 1, 4, true}, {128, 128, 64, 128, 1, 4, true}};
  static const double wave_cost[] = {0.77, 0.57};
  if (M <= 0 || N <= 0 || sm_count <= 0)
    return wide;
  auto waves = [&](const Tile &t) { return double((tile_count(t, M, N, batch) + sm_count - 1) / sm_count); };
  const Tile *pick = &wide;
  double best = waves(wide) * 0.95;
  for (size_t n = 0; n < std::size(narrower); ++n)
    if (double cost = waves(narrower[n]) * wave_cost[n]; cost <= best) {
      best = cost;
      pick = &narrower[n];
    }
  return *pick;
}

// The warpgroup tiles' split: only where the tiles leave half the SMs
// without a block, and no more slices than one wave holds. With six stages
// a 64 x 64 warpgroup tile streams its K well enough alone (H200, bf16:
// 64 x 11008 x 4096, 172 tiles, 0.0367 ms unsplit against 0.0480 split 2
// ways; 128 x 4096 x 16384, 128 tiles, 0.0682 unsplit, 0.0717 split 2
// ways), and a split beyond one wave ran a second one (16 x 4096 x 4096, 64
// tiles: 4 slices 0.0274 ms, 5 slices (default_split_k's) 0.0316 at three
// stages).
int one_wave_split_k(int64_t tiles, int64_t K, int k_step, int sm_count, int blocks_per_sm) {
  if (tiles <= 0 || K < kMinSplitDepth || tiles * 2 > sm_count)
    return 1;
  int64_t slots = int64_t{std::max(blocks_per_sm, 1)} * sm_count;
  int64_t deep_enough = std::max<int64_t>(K / std::max(kMinSliceDepth, k_step), 1);
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({slots / tiles, deep_enough, kMaxDefaultSlices})));
}

// default_mma_tiling's choice for `batch` products of M x N.
MmaTiling default_tiling_of_batch(MmaKind kind, int64_t batch, int64_t M, int64_t N, int sm_count) {
  bool tf32 = mma_reads_f32(kind);
  if (is_warpgroup_mma(kind)) {
    // Where the tiles still fill every multiprocessor: two warpgroups of
    // 64 x 256 (128 accumulators per thread, 244 registers, no spills) on a
    // 128 x 256 tile, four stages (192 KiB of shared memory), one block per
    // SM. On the H200 (coalesce-main, bf16, one session): 4096^3 0.257 ->
    // 0.247 ms, 8192^3 2.09 -> 1.85 ms against 128 x 128 tiles; as fast as
    // four 64 x 128 warpgroups there (0.248, 1.840), which spill at their
    // 128 registers. Else two warpgroups of 64 x 128 (64 accumulators per
    // thread) on a 128 x 128 tile, three stages: 96 KiB of shared memory,
    // two blocks per SM. The k step is one 128-byte swizzled row: 64
    // bf16/f16, 32 tf32, so tf32's tiles take the same shared memory.
    // 128 x 64 also where its blocks give nine in ten of the SMs one each:
    // two warpgroups per block there outrun 64 x 64's one at two blocks per
    // SM (H200, bf16 1024^3: 0.0155 -> 0.0121 ms at four stages, the tile
    // stored through shared memory). 64 x 64 (skinny shapes, one warpgroup)
    // keeps six stages in flight: H200, bf16 64 x 11008 x 4096 0.0488 ->
    // 0.0367 ms, 128 x 4096 x 16384 0.0781 -> 0.0682, 16 x 4096 x 4096
    // 0.0316 -> 0.0274 (with the split below) against three.
    static const Tile wide_tiles[] = {{128, 256, 64, 256, 1, 4, true},
                                      {128, 128, 64, 128, 2, 3, false},
                                      {128, 64, 64, 64, 2, 3, false},
                                      {128, 64, 64, 64, 1, 4, true},
                                      {64, 64, 64, 64, 2, 6, false}};
    const Tile &filling = first_filling(wide_tiles, M, N, sm_count, batch);
    const Tile &pick = &filling == &wide_tiles[0] ? fewest_waves(filling, M, N, sm_count, batch) : filling;
    MmaTiling tiling = tiling_of(pick, kind);
    tiling.k_step = 128 / mma_instruction(kind).operand.bytes(); // one 128-byte swizzled row
    // The 128 x 256 tile of a 16-bit output through shared memory (the
    // 128 x 128 tiles' two blocks per SM leave no room): the fragment
    // layout's direct stores fill a quarter of each sector. On the H200
    // (coalesce-main, bf16, one session): 4096^3 0.249 -> 0.230 ms, 8192^3
    // 1.878 -> 1.792, 8192 x 11008 x 4096 1.443 -> 1.309. Its 66 KiB take
    // the bytes of the pipeline's slots once the main loop is done
    // (SharedTileLayout.h), so the four stages stay.
    // Not where N is known to leave rows of other than 16-byte multiples:
    // no tile is stored through shared memory there.
    // 16-bit operands stage the f32 sums instead (SumsThroughShared): the
    // epilogue then runs in the copy-out's loop, its code once per vector
    // rather than unrolled over 128 accumulators a thread, whose 3,300
    // instructions a warp left the default kernel waiting for instructions
    // in half of its epilogue's samples (Nsight Compute, H100, 4096^3:
    // the epilogue a fifth of the time). With the bias read once per thread
    // before the copy-out's steps (scheduler/StageOutputTiles.cpp), on an
    // H100 (coalesce-main, bf16, two runs each, one session): 4096^3 0.216 /
    // 0.218 ms -> 0.218 / 0.215, 8192^3 1.636 / 1.632 -> 1.657 / 1.601,
    // 8192 x 11008 x 4096 1.161 / 1.160 -> 1.177 / 1.158, and where rows
    // are not whole vectors (direct stores before) 4093 x 4091 x 4097
    // 0.342 / 0.343 -> 0.299 / 0.299; 233 registers instead of 254, and
    // about half the PTX. Held-out shapes, same session: 4096 x 14336 x
    // 4096 0.757 / 0.769 -> 0.751 / 0.736, 4096 x 4096 x 14336 0.711 /
    // 0.708 -> 0.705 / 0.701, 2048 x 5120 x 5120 (128 x 128) 0.188 / 0.189
    // -> 0.185 / 0.187; but 3072^3 (128 x 192) 0.098 / 0.098 -> 0.101 /
    // 0.101: its 24 vectors a row do not divide the 256 threads, so a
    // thread's column moves from step to step and the bias is read in each.
    // So the sums where the columns stay, and where rows are not whole
    // vectors (the values' alternative is direct stores). tf32's f32
    // output too, whose direct stores fill half of each sector: on an
    // H100 (coalesce-main --wgmma, one session), 4096^3 0.511 -> 0.471 ms
    // (0.775x -> 0.827x cuBLAS tf32), 8192^3 3.498 -> 3.203 (0.837x ->
    // 0.953x), 154 registers instead of 245. FP8 keeps the tile of values:
    // its sums staged measured 2 to 10% slower (docs/performance.md).
    const bool sixteen_bit = mma_instruction(kind).operand.bytes() == 2;
    const int64_t threads = int64_t{pick.block_m / 64} * (pick.block_n / pick.warp_n) * 128;
    const bool columns_stay = threads % (pick.block_n / 8) == 0;
    if (pick.stores_through_shared && (tf32 || (sixteen_bit && (columns_stay || (N > 0 && N % 8 != 0)))))
      tiling.tile_stores = TileStores::SumsThroughShared;
    else if (pick.stores_through_shared && !tf32 && (N <= 0 || N % 8 == 0))
      tiling.tile_stores = TileStores::ThroughShared;
    tiling.a_padding = tiling.b_padding = 0;
    // Blocks in groups of 8 block rows, so that a wave's tiles of A and B
    // stay in L2. On the H200 (coalesce-main, bf16, one session), against
    // row order: 8192^3 1.790 -> 1.672 ms (0.903x -> 0.967x cuBLAS),
    // 8192 x 11008 x 4096 1.26 -> 1.195, 4096^3 0.227 -> 0.222. A
    // persistent grid walking the same order was slower (1.707, 1.241,
    // 0.234); groups of 16 measured within noise of 8 at 8192^3 (1.651).
    // tf32: 8192^3 3.622 -> 3.395 ms, 4096^3 0.482 -> 0.476.
    tiling.block_group_rows = 8;
    // Tiles copied by the TMA: at bf16 4096^3 on the H200, 0.368 -> 0.294
    // ms against every thread's cp.async copies (which stay in the kernel
    // for inputs whose rows are not 16-byte multiples). tf32 reads A and B
    // rounded and B transposed, which the TMA cannot make, so its TMA reads
    // copies made first (tma_padded_copies): every thread's cp.async
    // copies, which transposed B element by element and rounded every
    // element in shared memory, took 2.18 ms at 4096^3 on the H200 and
    // needed 196 registers at 128 x 128 tiles.
    // The truncating tf32 kind reads A and B as they lie, except a B stored
    // K x N, which schedule_gemm_mma copies transposed.
    tiling.tma = true;
    tiling.tma_padded_copies = mma_rounds_to_tf32(kind) ? PaddedCopies::Both : PaddedCopies::None;
    return tiling;
  }
  const Tile tiles[] = {{128, 128, 64, tf32 ? 32 : 64, tf32 ? 1 : 2}, {128, 64, 64, 32, 2}, {64, 64, 32, 32, 2}};
  MmaTiling tiling = tiling_of(first_filling(tiles, M, N, sm_count, batch), kind);
  tiling.k_step = tf32 ? 16 : 32;
  // Three steps in flight (dynamic shared memory past 48 KiB): at 4096^3 on
  // the H200, bf16 0.631 -> 0.511 ms and tf32 2.075 -> 1.456 ms against
  // double buffering; four or five were no faster.
  tiling.stages = 3;
  // The sums through shared memory, the epilogue in the copy-out (a 128 x
  // 128 tile's 68 KiB take the slots' bytes once the main loop is done):
  // on an H100 (coalesce-main --tensor-cores --dtype=bf16, one session),
  // 4096^3 0.490 -> 0.455 ms, 8192^3 3.864 -> 3.740, and the epilogue's
  // code once per vector instead of twice over 128 accumulators a thread
  // (whole tiles and ragged ones): 437 -> 108 KB of PTX.
  tiling.tile_stores = TileStores::SumsThroughShared;
  return tiling;
}

} // namespace

MmaTiling default_mma_tiling(MmaKind kind, int64_t M, int64_t N, int sm_count) {
  return default_tiling_of_batch(kind, 1, M, N, sm_count);
}

bool warpgroup_mma_by_default(Type operand, int64_t M) {
  constexpr int64_t kTf32WarpMmaRows = 128;
  return operand != Float(32) || M <= 0 || M > kTf32WarpMmaRows;
}

MmaTiling ping_pong_mma_tiling(MmaKind kind, int persistent_blocks, ConsumerSchedule schedule) {
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, 4096, std::max(persistent_blocks, 1));
  t.block_m = t.block_n = t.warp_m = t.warp_n = 128;
  t.swap_ab = false;
  t.stages = 4;
  t.min_blocks_per_sm = 1;
  t.block_group_rows = 0;
  t.split_k = 1;
  t.tma = true;
  t.tma_padded_copies = PaddedCopies::None;
  t.cluster_blocks = 0;
  t.producer_warps = 4;
  t.producer_registers = schedule == ConsumerSchedule::PingPong ? 40 : 0;
  t.persistent_blocks = persistent_blocks;
  t.tile_stores = TileStores::Direct;
  t.consumer_schedule = schedule;
  return t;
}

MmaTiling default_batched_mma_tiling(MmaKind kind, int64_t batch, int64_t M, int64_t N, int64_t K, int sm_count) {
  MmaTiling t = default_tiling_of_batch(kind, std::max<int64_t>(batch, 1), M, N, sm_count);
  // The grid's z runs the products one after another, each product's tiles
  // together: no groups to keep A and B in L2 across products.
  t.block_group_rows = 0;
  // M unknown to the rule: a batch's inputs are 3-D, which the padded
  // copies are not made of, so no copy only for split sectors.
  use_tma_copies_where_needed(t, 0, N, K);
  return t;
}

namespace {

// The warpgroup tile for a deep K (at least kDeepK) where the default took
// 64 x 64 tiles: 128 x 128 (two 64 x 128 warpgroups), one block per SM,
// six stages (192 KiB), split to fill one wave, where that takes from 2 to
// kDeepTileSlices slices (each slice writes a tile of f32 partial sums,
// which the combine reads back).
constexpr Tile kDeepKTile{128, 128, 64, 128, 1, 6, false};
constexpr int kDeepTileSlices = 16;
constexpr int64_t kDeepK = 16384;

int64_t tiles_of(const MmaTiling &t, int64_t M, int64_t N) {
  return ((M + t.block_m - 1) / t.block_m) * ((N + t.block_n - 1) / t.block_n);
}

// A warpgroup tiling's split, where `t` has one: its slices combined by a
// kernel of their own (SplitKMode::CombineKernel); then, at a deep K, split
// or not, kDeepKTile where its rule takes it. Measured on the H200 (bf16 + bias +
// GELU, L2 flushed, one benchmark run each, ms): the last block's combine
// against the combine kernel on the same 64 x 64 tiles, 256 x 256 x 65536
// in 16 slices 0.0519 -> 0.0356, 512 x 512 x 32768 in 4 slices 0.0535 ->
// 0.0506; kDeepKTile at 512 x 512 x 32768 in 8 slices 0.0464, 128 x 4096 x
// 16384 in 4 slices 0.0559 (against 0.0647 for 64 x 64 tiles unsplit,
// 0.0689 split 2 ways), 256 x 256 x 65536 in 33 slices 0.0389 (so there
// 64 x 64 stays); 128 x 256 tiles were slower at all three (0.0462,
// 0.0478, 0.0635), and 128 x 128 tiles at two blocks per SM and three
// stages too (0.0464, 0.0510, 0.0636). kDeepKTile's stages, 4 / 5 / 6 (one
// run each): 512 x 512 x 32768 0.0464 / 0.0448 / 0.0433 ms, 128 x 4096 x
// 16384 0.0559 / 0.0561 / 0.0564.
void split_deep_k(MmaTiling &t, int64_t M, int64_t N, int64_t K, int sm_count) {
  if (t.split_k > 1)
    t.split_k_mode = SplitKMode::CombineKernel;
  if (K < kDeepK || t.block_m != 64 || t.block_n != 64 || M <= 64) // a 128-row tile: mostly empty rows
    return;
  MmaTiling deep = t;
  take_tile(deep, kDeepKTile);
  deep.tile_stores = TileStores::Direct;
  deep.block_group_rows = 0;
  deep.split_k_mode = SplitKMode::CombineKernel;
  deep.split_k = one_wave_split_k(tiles_of(deep, M, N), K, deep.k_step, sm_count, deep.min_blocks_per_sm);
  if (deep.split_k > 1 && deep.split_k <= kDeepTileSlices)
    t = deep;
}

} // namespace

MmaTiling default_mma_tiling(MmaKind kind, int64_t M, int64_t N, int64_t K, int sm_count, bool a_km, bool b_nk) {
  MmaTiling t = default_mma_tiling(kind, M, N, sm_count);
  if (M > 0 && N > 0) {
    // As many blocks per multiprocessor as the tiling asks registers for.
    t.split_k = is_warpgroup_mma(kind) ? one_wave_split_k(tiles_of(t, M, N), K, t.k_step, sm_count, t.min_blocks_per_sm)
                                       : default_split_k(tiles_of(t, M, N), K, t.k_step, sm_count, t.min_blocks_per_sm);
    if (is_warpgroup_mma(kind))
      split_deep_k(t, M, N, K, sm_count);
  }
  use_tma_copies_where_needed(t, M, N, K, a_km, b_nk);
  return t;
}

namespace {

// Shared memory one sm_90 multiprocessor gives its blocks, in the 1024-byte
// units the kernel lays its tiles out in.
constexpr int64_t kSharedKiBPerSm = 227;

int64_t kib(int64_t bytes) { return (bytes + 1023) / 1024; }

// One stage's A and B tiles.
int64_t stage_kib(const MmaTiling &t) {
  const int64_t element = mma_instruction(t.kind).operand.bytes();
  return kib(int64_t{t.block_m} * t.k_step * element) + kib(int64_t{t.block_n} * t.k_step * element);
}

// Rows of x up to which a decode step runs swapped: up to 32 always; from
// 33 to 64, where x's rows already fill a 64-row instruction tile, only
// where the swapped tiles leave the wave to a split of K. Measured on the
// H200 (bf16 + bias + GELU, L2 flushed, one session): M = 64 swapped /
// not, 64x4096x4096 (split 4 ways) 22.0 / 26.9 us, 64x11008x4096 35.9 /
// 36.3, 64x8192x8192 51.5 / 48.3 (docs/performance.md).
constexpr int64_t kSwapAbRows = 32, kSwapAbSplitRows = 64;

} // namespace

void swap_ab_where_rows_are_few(MmaTiling &t, int64_t M, int64_t N, int64_t K, int sm_count) {
  if (!is_warpgroup_mma(t.kind) || mma_instruction(t.kind).operand.bits != 16 || M <= 0 || M > kSwapAbSplitRows ||
      N <= 0)
    return;
  MmaTiling swapped = t;
  const int rows_of_x = static_cast<int>(std::max<int64_t>(8, (M + 7) / 8 * 8));
  swapped.swap_ab = true;
  swapped.block_m = swapped.warp_n = rows_of_x;
  swapped.block_n = swapped.warp_m = 64;
  swapped.min_blocks_per_sm = 2;
  swapped.k_step = 128;
  // Two blocks per SM, a 1 KiB reserve each for the barriers.
  swapped.stages = static_cast<int>(std::clamp<int64_t>((kSharedKiBPerSm / 2 - 1) / stage_kib(swapped), 3, 8));
  swapped.tile_stores = TileStores::Direct;
  swapped.block_group_rows = 0;
  swapped.persistent_blocks = swapped.producer_warps = swapped.producer_registers = swapped.cluster_blocks = 0;
  const int64_t tiles = (N + swapped.block_n - 1) / swapped.block_n;
  swapped.split_k = K > 0 ? one_wave_split_k(tiles, K, swapped.k_step, sm_count, swapped.min_blocks_per_sm) : 1;
  // The last block's combine, as measured (docs/performance.md): a swapped
  // tile is a few rows of x, whose slices one block sums quickly.
  swapped.split_k_mode = SplitKMode::Deterministic;
  if (M <= kSwapAbRows || swapped.split_k > 1)
    t = swapped;
}

void use_tma_copies_where_needed(MmaTiling &t, int64_t M, int64_t N, int64_t K, bool a_km, bool b_nk) {
  if (!t.uses_tma())
    return;
  // tf32 always: the copies round A and B and transpose B.
  if (mma_rounds_to_tf32(t.kind)) {
    t.tma_padded_copies = PaddedCopies::Both;
    return;
  }
  // 16-bit operands: 8 elements per 16 bytes; 8-bit: 16; f32 (the
  // truncating tf32 kind, which reads them as they lie): 4.
  const int64_t bytes = mma_instruction(t.kind).operand.bytes();
  auto not_multiple = [&](int64_t row, int64_t of_bytes) { return row > 0 && row % (of_bytes / bytes) != 0; };
  const int64_t a_row = a_km ? M : K, b_row = b_nk ? K : N;
  if (not_multiple(a_row, 16) || not_multiple(b_row, 16)) {
    t.tma_padded_copies = PaddedCopies::Both;
    return;
  }
  // Rows that split sectors, read by enough tiles: B once per block row, A
  // once per block column (block_m runs along M in a swapped tiling too).
  if (M <= 0 || N <= 0 || K <= 0)
    return;
  auto tiles = [](int64_t extent, int block) { return (extent + block - 1) / block; };
  const bool copy_a = not_multiple(a_row, 32) && tiles(N, t.block_n) >= kRereadsWorthACopy;
  const bool copy_b = not_multiple(b_row, 32) && tiles(M, t.block_m) >= kRereadsWorthACopy;
  if (copy_a || copy_b)
    t.tma_padded_copies = copy_a && copy_b ? PaddedCopies::Both : copy_a ? PaddedCopies::A : PaddedCopies::B;
}

// The output's tile in shared memory: the values' rows (16-bit, padded by
// 16 bytes) or the f32 sums' (padded by 32), in KiB.
static int64_t output_tile_kib(const MmaTiling &t) {
  return kib(t.tile_stores == TileStores::ThroughShared ? int64_t{t.block_m} * (t.block_n * 2 + 16)
                                                        : int64_t{t.block_m} * (t.block_n * 4 + 32));
}

// Whether the output's tile takes the pipeline's slots once the main loop
// is done (SharedTileLayout.h): a pipeline of three or more stages, which
// drains its copies after its loop, and no persistent tile loop, producer
// warps or cluster that keeps the slots live. Double buffering's loop
// issues copies in every iteration, and keeps its tiles apart.
static bool tile_takes_the_slots(const MmaTiling &t) {
  return t.double_buffered && t.stages >= 3 && t.persistent_blocks == 0 && t.producer_warps == 0 &&
         t.cluster_blocks <= 1;
}

// Shared memory a block may take: a warpgroup MMA's kernel runs on sm_90a
// only (227 KiB); any other gets what every supported target gives (99
// KiB: sm_86, sm_89).
static int64_t shared_kib_per_block(const MmaTiling &t) { return is_warpgroup_mma(t.kind) ? kSharedKiBPerSm : 99; }

void fit_output_tile_beside_stages(MmaTiling &t) {
  if (t.tile_stores == TileStores::Direct || tile_takes_the_slots(t))
    return;
  // The stages, the output's tile, the barriers.
  const int64_t tile = output_tile_kib(t);
  while (t.stages > 2 && t.stages * stage_kib(t) + tile + 2 > shared_kib_per_block(t))
    --t.stages;
}

void stage_values_where_sums_do_not_fit(MmaTiling &t) {
  if (t.tile_stores != TileStores::SumsThroughShared)
    return;
  // The f32 sums of a 128 x 256 tile (132 KiB) fit beside no two stages
  // of a warpgroup MMA's, nor a warp MMA's 99 KiB at all.
  const int64_t beside = tile_takes_the_slots(t) ? 0 : 2 * stage_kib(t);
  if (beside + output_tile_kib(t) + 2 <= shared_kib_per_block(t))
    return;
  // The values' tile where the warpgroup MMA writes a 16-bit output.
  t.tile_stores = is_warpgroup_mma(t.kind) && !mma_reads_f32(t.kind) ? TileStores::ThroughShared : TileStores::Direct;
}

namespace {

// out's tile per block, laid out in warp tiles, and the block-level knobs.
void schedule_output_tile(Func out, const Var &i, const Var &j, const MmaTiling &t) {
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
  // out(b, i, j): a batch of products, the batch an outer block dimension.
  std::vector<VarOrRVar> blocks = gemm_batch_vars(out, i, "schedule_gemm_mma");
  blocks.push_back(bi);
  blocks.push_back(bj);
  out.tile(i, j, bi, bj, ii, jj, t.block_m, t.block_n).gpu_blocks(blocks);
  if (t.swap_ab)
    out.reorder({bi, bj, jj, ii}).mma_tile(jj, ii, t.kind, t.warp_m, t.warp_n, warp, lane, mi, nj, fi, fj);
  else
    out.mma_tile(ii, jj, t.kind, t.warp_m, t.warp_n, warp, lane, mi, nj, fi, fj);
  if (t.min_blocks_per_sm > 0)
    out.gpu_min_blocks_per_sm(t.min_blocks_per_sm);
  // Groups order the tiles of one product; a batch's products are apart.
  if (t.groups_blocks() && blocks.size() == 2)
    out.gpu_block_groups(t.block_group_rows);
  if (t.persistent_blocks > 0)
    out.gpu_persistent_blocks(t.persistent_blocks);
  if (t.consumer_schedule != ConsumerSchedule::Together)
    out.gpu_consumer_schedule(t.consumer_schedule);
  // A wider output's tile would not fit beside the pipeline (the staged
  // sums are f32 whatever the output is).
  const bool fits = out.contents()->type.bytes() <= 2 || t.tile_stores == TileStores::SumsThroughShared;
  out.gpu_tile_stores(fits ? t.tile_stores : TileStores::Direct);
  // Blocks of one block column read the same tiles of B.
  if (t.uses_tma() && t.cluster_blocks > 1)
    out.gpu_cluster(bi, t.cluster_blocks);
}

// Whether acc's update reads `input` with the reduction variable first:
// A(k, i) or B(k, j), whose rows run along k.
bool rows_along_k(const Func &acc, const Input &input, const RDom &k) {
  struct Find : IRVisitor {
    const std::string &input, &k;
    bool found = false;
    Find(const std::string &input, const std::string &k) : input(input), k(k) {}
    using IRVisitor::visit;
    void visit(const Call *op) override {
      if (op->call_type == CallType::Input && op->name == input && !op->args.empty())
        if (const auto *first = op->args.front().as<Variable>(); first && first->name == k)
          found = true;
      IRVisitor::visit(op);
    }
  } find(input.name(), RVar(k).name());
  for (const internal::Definition &update : acc.contents()->updates)
    find.visit_expr(update.value);
  return find.found;
}

// Whether the TMA reads `input` through a copy made first: on every launch
// where the tiling asks for copies (tma_padded_copies), and for the
// truncating tf32 kind, which reads both operands K-major and has no
// rounding copy, where the input's rows run along k (a copy transposes it);
// where its rows are ragged only, as the tiling may ask.
PaddedCopy padded_copy_of(const Func &acc, const Input &input, const RDom &k, const MmaTiling &t, bool b) {
  if (copies_operand(t.tma_padded_copies, b) || (mma_truncates_to_tf32(t.kind) && rows_along_k(acc, input, k)))
    return PaddedCopy::Always;
  return t.tma_padded_copies == PaddedCopies::WhereRagged ? PaddedCopy::WhereRowsAreRagged : PaddedCopy::Never;
}

// acc's reduction on the instruction, A and B staged for it.
void schedule_mma_sum(Func acc, const Input &A, const Input &B, const RDom &k, const MmaTiling &t) {
  // The fragments of a warp read rows g and columns 2t of a tile: with 8
  // elements of padding per row, the 32 lanes of one read hit 32 banks. A
  // warpgroup MMA's swizzled layout is the compiler's.
  SharedLayout a_layout, b_layout;
  if (!is_warpgroup_mma(t.kind)) {
    a_layout.padding = t.a_padding;
    b_layout.padding = t.b_padding;
  }
  TileCopies a_copies = OneBuffer{true}, b_copies = OneBuffer{true};
  if (t.uses_tma()) {
    TmaCopies tma;
    tma.stages = t.stages;
    if (t.producer_warps > 0 || t.producer_registers > 0)
      tma.producer = ProducerWarps{t.producer_warps, t.producer_registers};
    tma.padded_copy = padded_copy_of(acc, A, k, t, false);
    a_copies = tma;
    tma.multicast = t.cluster_blocks > 1;
    tma.padded_copy = padded_copy_of(acc, B, k, t, true);
    b_copies = tma;
  } else if (t.double_buffered) {
    a_copies = b_copies = AsyncCopies{t.stages, true};
  }
  RVar ko("ko"), kk("kk");
  acc.update()
      .mma(k, ko, kk, t.k_step)
      .allow_reassociation()
      .stage_in_shared(A, ko, a_layout, a_copies)
      .stage_in_shared(B, ko, b_layout, b_copies);
}

} // namespace

void schedule_gemm_mma(Func out, Func acc, const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k,
                       const MmaTiling &t) {
  // The TMA's padded copies are of 2-D inputs: a batch whose tiling asks
  // for them (tf32, rows that are not whole 16-byte vectors) takes the
  // cp.async copies.
  MmaTiling tiling = t;
  // One copied only where its rows are ragged is read as it lies (the
  // kernel takes cp.async copies where it cannot be).
  if (!gemm_batch_vars(out, i, "schedule_gemm_mma").empty() && tiling.uses_tma()) {
    if (tiling.tma_padded_copies == PaddedCopies::WhereRagged)
      tiling.tma_padded_copies = PaddedCopies::None;
    if (padded_copy_of(acc, A, k, tiling, false) == PaddedCopy::Always ||
        padded_copy_of(acc, B, k, tiling, true) == PaddedCopy::Always) {
      tiling.tma = false;
      tiling.tma_padded_copies = PaddedCopies::None;
    }
  }
  schedule_output_tile(out, i, j, tiling);
  out.fuse_epilogue(acc, Var("bj"));
  if (tiling.split_k > 1)
    out.split_k(acc, k, Var("kz"), tiling.split_k, tiling.split_k_mode);
  if (tiling.split_k > 1 && tiling.split_k_tail_rows > 0)
    out.split_k_tail(Var("bi"), tiling.split_k_tail_rows);
  schedule_mma_sum(acc, A, B, k, tiling);
}

MmaTiling default_fused_gemms_tiling(MmaKind kind, int64_t M, int64_t N, int sm_count) {
  MmaTiling t = default_mma_tiling(kind, M, N, sm_count);
  t.split_k = 1;
  if (!is_warpgroup_mma(kind)) {
    t.tile_stores = TileStores::Direct; // two sums' tiles would not fit in 99 KiB
    return t;
  }
  t.block_m = t.block_n = 128;
  t.warp_m = 64;
  t.warp_n = 128;
  t.stages = 4;
  t.min_blocks_per_sm = 1;
  // As default_mma_tiling's 16-bit tiles: through shared memory where the
  // rows may be whole 16-byte vectors (schedule_output_tile keeps it for
  // 16-bit outputs only).
  t.tile_stores = N <= 0 || N % 8 == 0 ? TileStores::ThroughShared : TileStores::Direct;
  return t;
}

void schedule_fused_gemms_mma(Func out, Func first, const Input &B_first, Func second, const Input &B_second,
                              const Input &A, const Var &i, const Var &j, const RDom &k, const MmaTiling &t) {
  if (t.split_k > 1)
    user_error("schedule_fused_gemms_mma: a tiling with split_k ", t.split_k,
               "; fused reductions are not split across blocks yet, so use split_k = 1");
  schedule_output_tile(out, i, j, t);
  out.fuse_epilogue(first, Var("bj"));
  out.fuse_epilogue(second, Var("bj"));
  schedule_mma_sum(first, A, B_first, k, t);
  schedule_mma_sum(second, A, B_second, k, t);
  second.fuse_reduction_with(first);
}

} // namespace coalesce
