#pragma once
// The tensor-core GEMM schedule: the same algorithm as GemmSchedule.h
// (acc(i, j) = 0; acc(i, j) += A(i, k) * B(k, j); out = f(acc, ...)), with
// the reduction mapped onto warp MMA instructions, written only with the
// schedule primitives a user has.

#include "dsl/Func.h"

#include <cstdint>
#include <string>

namespace coalesce {

/// Which inputs of a tensor-core GEMM the TMA reads through a copy made
/// first (MmaTiling::tma_padded_copies): none, A, B, or both on every
/// launch (PaddedCopy::Always); or each of A and B on the launches where
/// its rows are not whole 16-byte multiples, the input itself elsewhere
/// (PaddedCopy::WhereRowsAreRagged: for sizes given at run time, one
/// pipeline in the kernel instead of the TMA's and the cp.async copies').
enum class PaddedCopies { None, A, B, Both, WhereRagged };
inline constexpr PaddedCopies kPaddedCopies[] = {PaddedCopies::None, PaddedCopies::A, PaddedCopies::B,
                                                 PaddedCopies::Both, PaddedCopies::WhereRagged};
/// "none", "a", "b", "both", "where-ragged".
const char *padded_copies_name(PaddedCopies copies);
/// Whether `copies` copy A (`b` false) or B (`b` true) on every launch.
bool copies_operand(PaddedCopies copies, bool b);

/// The knobs of the tensor-core GEMM schedule.
struct MmaTiling {
  MmaKind kind = MmaKind::BF16_m16n8k16;
  int block_m = 128, block_n = 128; ///< output tile per GPU block
  /// Output tile per warp: 64 x 64 (4 warps for 128 x 128), measured on the
  /// H200 at bf16 4096^3: 0.645 ms, against 1.07 ms with 8 warps of 64 x 32
  /// (which leave one block per SM) and 0.90 to 1.04 ms for 128x256,
  /// 256x128 and 64x128 tiles.
  int warp_m = 64, warp_n = 64;
  /// Swap-AB: the instruction's rows run along N (B's rows, stored N x K,
  /// fill its M; A's fill its N), so a few rows of A (a decode step) make
  /// a narrow instruction tile instead of a mostly empty 64-row one. The
  /// warp tile is then warp_m of the block's N by warp_n of its M; the
  /// result is the same (the accumulator keeps out's coordinates).
  bool swap_ab = false;
  int k_step = 32;                  ///< reduction elements staged per step
  bool double_buffered = true;      ///< fetch the next K step while computing
  int stages = 2;                   ///< K steps in flight (3 or more: a deeper pipeline)
  int a_padding = 8, b_padding = 8; ///< elements after each staged row (bank conflicts)
  int min_blocks_per_sm = 2;        ///< ask ptxas to fit this many blocks per SM (0: no cap)
  /// gpu_block_groups (0: blocks row by row), where groups_blocks().
  int block_group_rows = 0;
  int persistent_blocks = 0; ///< gpu_persistent_blocks (0: a block per tile)
  /// Warpgroup MMAs: copy the tiles with the TMA (TmaCopies)
  /// instead of cp.async where the pipeline has 3 or more stages
  /// (default_mma_tiling's choice for warpgroup MMAs).
  bool tma = false;
  /// Whether the blocks run in groups of block_group_rows: not with a split
  /// of every tile (its slices are a third block loop, which groups do not
  /// order; split_k_tail's work units are rows of the two) nor with
  /// clusters (a cluster's blocks must be consecutive block rows).
  bool groups_blocks() const {
    return block_group_rows > 0 && (split_k <= 1 || split_k_tail_rows > 0) && !(uses_tma() && cluster_blocks > 1);
  }
  bool uses_tma() const { return tma && double_buffered && stages >= 3; }
  /// With TMA copies: warps of their own issue them (ProducerWarps, 1 to
  /// 4), past the MMA warps in the block; 0: the MMA warps' first thread
  /// does.
  int producer_warps = 0;
  /// With 4 producer warps: register reallocation
  /// (ProducerWarps::registers): the producer warpgroup keeps this many
  /// registers per thread and leaves after its copies, the MMA warps take
  /// the rest; 0: none.
  int producer_registers = 0;
  /// With TMA copies: which of A and B are copied first, by a kernel each,
  /// into workspaces whose rows are padded to 128-byte multiples, for the
  /// TMA to read (TmaCopies::padded_copy; PaddedCopies). Both for shapes
  /// whose rows the TMA cannot describe, which otherwise take the cp.async
  /// copies, and for tf32 (needed there: the copies round to tf32 and
  /// transpose B); one of them where its rows split the L2's 32-byte
  /// sectors and many tiles read it (use_tma_copies_where_needed).
  PaddedCopies tma_padded_copies = PaddedCopies::None;
  /// With TMA copies: blocks of consecutive block rows in clusters of this
  /// many (gpu_cluster along bi), which share B's tiles
  /// (TmaCopies::multicast: each copies 1 / C of every box for all); 0: no
  /// clusters.
  int cluster_blocks = 0;
  /// How the blocks write their tiles (gpu_tile_stores): ThroughShared
  /// for a 16-bit output only (a wider output's stores are direct: its
  /// tile would not fit beside the pipeline); SumsThroughShared for any.
  /// default_mma_tiling stages the sums of 128 x 256 warpgroup tiles (the
  /// values for FP8) and of every warp-MMA tile.
  TileStores tile_stores = TileStores::Direct;
  /// With a persistent grid and producer warps: how the MMA warps share the
  /// block's tiles (gpu_consumer_schedule); PingPong doubles them into two
  /// groups that take the tiles in turn.
  ConsumerSchedule consumer_schedule = ConsumerSchedule::Together;
  /// Blocks the reduction is split across (split_k); 1: one block per tile.
  int split_k = 1;
  SplitKMode split_k_mode = SplitKMode::Deterministic;
  /// With split_k: only the tiles of the last this many block rows are
  /// split, the others run whole (split_k_tail); 0: every tile.
  int split_k_tail_rows = 0;

  /// MMA warps per block: a warpgroup MMA's 64-row tile is 4 warps; two
  /// groups of them for ping-pong.
  int warps() const {
    int rows = swap_ab ? block_n : block_m, columns = swap_ab ? block_m : block_n;
    return (rows / warp_m) * (columns / warp_n) * (is_warpgroup_mma(kind) ? 4 : 1) *
           (consumer_schedule == ConsumerSchedule::PingPong ? 2 : 1);
  }
  std::string str() const;
};

/// The tiling for an M x N problem with instruction `kind` on a GPU with
/// `sm_count` multiprocessors: the largest block tile that still gives
/// every multiprocessor a block (128x128, 128x64, then 64x64), skipping
/// 128-row tiles when M fits in 64 rows; k step 32 for bf16/f16 and 16 for
/// tf32 (64 bytes of each staged row either way), three pipeline stages.
/// tf32 keeps 64 x 32 warp
/// tiles and one block per SM at 128x128: its fragments need more registers
/// than 64 x 64 leaves (ptxas spills there). Warpgroup kinds take 64 x 256
/// per warpgroup on 128 x 256 with four stages and one block per SM where
/// those tiles fill the GPU, or 128 x 192 / 128 x 128 (one block per SM,
/// four stages) where their last wave is enough fuller to finish first
/// (fewest_waves); otherwise 64 x 128 per warpgroup on 128 x 128 (then
/// 128 x 64, then 64 x 64 tiles with six stages); k step of one 128-byte
/// row (64 bf16/f16, 32 tf32), copies by the TMA; for tf32 the TMA reads
/// copies of A and B made first (tma_padded_copies), rounded to tf32, B
/// transposed.
MmaTiling default_mma_tiling(MmaKind kind, int64_t M, int64_t N, int sm_count);
/// The same, and the reduction split across blocks when the tiles leave
/// multiprocessors idle (default_split_k, dsl/recipes/GemmSchedule.h; for
/// warpgroup tiles only where they leave half of them idle, and no more
/// slices than one wave holds);
/// with TMA copies, copies of the inputs (tma_padded_copies) where the TMA
/// needs them or reads their rows across sectors
/// (use_tma_copies_where_needed; A stored K x M with `a_km`, B stored N x K
/// with `b_nk`).
MmaTiling default_mma_tiling(MmaKind kind, int64_t M, int64_t N, int64_t K, int sm_count, bool a_km = false,
                             bool b_nk = false);
/// For `batch` products of M x N x K (out(b, i, j), the batch the grid's
/// z): the tile default_mma_tiling(kind, M, N, sm_count) takes, counting
/// the blocks of every product (so 64 products of 512 x 512 take 128 x 256
/// tiles, not the 64 x 64 that fill the GPU for one), unsplit (a batch's
/// products are not split), without block groups, and with the copies
/// the TMA needs (use_tma_copies_where_needed).
MmaTiling default_batched_mma_tiling(MmaKind kind, int64_t batch, int64_t M, int64_t N, int64_t K, int sm_count);
/// The tiling ping-pong consumers run on (ConsumerSchedule::PingPong, or
/// Together for the same tiling with one group of MMA warps): 128 x 128
/// tiles of one 128-row warpgroup of `kind` (a 16-bit warpgroup kind),
/// four TMA stages, a producer warpgroup that keeps 40 registers (none with
/// Together: one group of MMA warps at 256 threads gains nothing from
/// reallocation), one block per SM on a persistent grid of
/// `persistent_blocks`, direct stores.
MmaTiling ping_pong_mma_tiling(MmaKind kind, int persistent_blocks,
                               ConsumerSchedule schedule = ConsumerSchedule::PingPong);

/// Whether the default GEMM of `operand` elements with M rows runs on the
/// warpgroup MMA, where the target has one: bf16, f16 and FP8 always; f32
/// rounded to tf32 only above 128 rows (M <= 0: unknown, taken as many).
/// The tf32 warpgroup kind reads copies of A and B rounded to tf32 (B
/// transposed) that kernels of their own make first, and at few rows B's
/// copy moves twice the bytes the GEMM itself reads; the warp MMA rounds in
/// registers and copies nothing. On an H100 (coalesce-bench, tf32 + bias +
/// GELU, B stored K x N, L2 flushed, the defaults; one session), warpgroup
/// -> warp MMA: 16x4096x4096 0.087 -> 0.048 ms, 64x11008x4096 0.209 ->
/// 0.105, 128x4096x16384 0.311 -> 0.233; at 256x256x65536 0.167 -> 0.184
/// (the autotuner found a warp tiling at 0.139 there, but not the default's),
/// so from 129 rows on the warpgroup MMA stays.
bool warpgroup_mma_by_default(Type operand, int64_t M);

/// For a 16-bit warpgroup MMA where M is at most 32 rows (a decode step;
/// B stored either way: N x K, nn.Linear's weight, is read K-major, K x N
/// with the instruction's transpose flag): swap-AB on 64-row tiles of B
/// with the rows of x, rounded up to 8, as the instruction's N; a k step of
/// two 128-byte rows, as many stages as two blocks per SM hold, and the
/// split that fills one wave. From 33 to 64 rows the same, where the
/// swapped tiles need that split to fill the wave. Leaves `t` alone
/// otherwise. Measured on the
/// H200 (bf16 + bias + GELU, W stored N x K, L2 flushed): 1x4096x4096 25.4
/// -> 17.3 us, 16x4096x4096 27.0 -> 17.9, 16x11008x4096 49.4 -> 33.6,
/// 1x8192x8192 75.8 -> 45.0 (docs/performance.md).
void swap_ab_where_rows_are_few(MmaTiling &t, int64_t M, int64_t N, int64_t K, int sm_count);

/// Sets t.tma_padded_copies where t copies with the TMA and the TMA cannot
/// read the inputs themselves, or reads them slowly:
/// - both, always for tf32 (whose copies round A and B to tf32 and store B
///   transposed), and where a row of A or of B is not a whole 16-byte
///   multiple;
/// - A or B alone where its rows are 16-byte but not 32-byte multiples
///   (each 128-byte row of a TMA box then spans five of the L2's 32-byte
///   sectors and two lines: 5000 x 3000 x 2000 in bf16, B's rows 6,000
///   bytes, 0.152 ms against 0.125 with B copied first, on an H100) and at
///   least kRereadsWorthACopy tiles read it (B is read once per block row,
///   A once per block column): the copy reads and writes the input once.
/// A's rows are its K elements (M with `a_km`: stored K x M), B's its N (K
/// with `b_nk`: stored N x K, nn.Linear's weight); a size <= 0 (known only
/// at run time) is neither ragged nor split.
/// What a tiling chosen for another shape (a tuning database's nearest
/// entry) needs before it runs at this one.
void use_tma_copies_where_needed(MmaTiling &t, int64_t M, int64_t N, int64_t K, bool a_km = false, bool b_nk = false);
/// The tiles that must read an input for use_tma_copies_where_needed to
/// copy it only because its rows split sectors. At 5000 x 3000 x 2000 (H100)
/// the copy of B alone took 12 us and the split sectors about 1 us per
/// block row's pass over B (40 of them: 39 us), so a copy pays from about
/// 12 passes on.
constexpr int64_t kRereadsWorthACopy = 16;

/// An output tile stored through shared memory (TileStores::ThroughShared,
/// or the sums of SumsThroughShared)
/// takes the bytes of the pipeline's slots once the main loop is done,
/// but only in a block that is done with its slots before the epilogue
/// and meets its other warps at barriers of the whole block (no
/// persistent tile loop, no producer warps, no cluster:
/// scheduler/SharedTileLayout.h). Otherwise the tile needs bytes of its
/// own: for a tiling whose stages and tile would not fit the block's
/// shared memory together (227 KiB for the warpgroup MMA, 99 otherwise),
/// this takes stages away until they do (the 128 x 256
/// default's 66 KiB tile fits beside three 48 KiB stages, not four).
/// What a tiling needs after those knobs are set on it.
void fit_output_tile_beside_stages(MmaTiling &t);

/// The default stages a 16-bit or f32 output's sums (TileStores::SumsThroughShared)
/// over the slots' bytes. A default tiling changed afterwards so that its
/// pipeline runs on past the main loop (producer warps, a persistent grid,
/// clusters) keeps the tile apart from the stages, and where the f32 sums
/// fit beside no two stages (a warpgroup's 128 x 256: 132 KiB), or do not
/// fit a block at all (a warp MMA's kernel gets 99 KiB), this stages the
/// values (ThroughShared) instead where the warpgroup MMA writes a 16-bit
/// output, and stores directly elsewhere. For tilings whose tile stores
/// are the default's, before fit_output_tile_beside_stages; a tile store
/// the user chose stays.
void stage_values_where_sums_do_not_fit(MmaTiling &t);

/// Schedules out/acc for warp MMA: out's block_m x block_n tile per GPU
/// block, laid out by mma_tile in warp tiles; acc computed on it
/// (fuse_epilogue), its reduction mapped by mma() in steps of k_step, A and
/// B staged row-major in shared memory by zero-filling copies (so any K is
/// exact): AsyncCopies of `stages` tiles, TmaCopies where uses_tma(), one
/// buffer without double_buffered. The epilogue runs once, on the
/// accumulator fragments. A batch, out(b, i, j) with acc(b, i, j) +=
/// A(b, i, k) * B(b, k, j) (either operand may leave out b: one for the
/// whole batch), maps b to the grid's third block dimension; its blocks are
/// not grouped, and it takes the cp.async copies where the tiling asks for
/// the TMA's padded copies (which pad 2-D inputs only).
void schedule_gemm_mma(Func out, Func acc, const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k,
                       const MmaTiling &tiling);

/// The tiling for two fused sums (schedule_fused_gemms_mma) of `kind` at M x
/// N (each sum's N): on a warpgroup kind, a 128 x 128 tile of two 64 x 128
/// warpgroups, whose two accumulators take 128 registers per thread (the
/// 128 x 256 default's would take 256, more than a thread has), four stages
/// (three tiles each: A and both B's) beside the output tile staged in
/// shared memory where the output is 16-bit and N a multiple of 8 (226 KiB
/// in all for bf16); on
/// a warp-level kind, default_mma_tiling's. Without split_k. On the H200
/// (bf16, 4096 x 11008 x 4096): 1.164 ms at four stages, 1.202 at three.
MmaTiling default_fused_gemms_tiling(MmaKind kind, int64_t M, int64_t N, int sm_count);

/// Two sums over the same A on one tile, as a SwiGLU's gate and up
/// projections (first = A B_first^T, second = A B_second^T): out scheduled
/// as by schedule_gemm_mma, both sums computed on its tile with the same
/// instruction and staging, their update loops merged (second
/// .fuse_reduction_with(first)), so each tile of A is copied once and feeds
/// both instructions; the epilogue runs once, after both sums. Without
/// split_k (not built for fused reductions).
void schedule_fused_gemms_mma(Func out, Func first, const Input &B_first, Func second, const Input &B_second,
                              const Input &A, const Var &i, const Var &j, const RDom &k, const MmaTiling &t);

} // namespace coalesce
