#pragma once
// The schedule as plain data, recorded by Func and Stage methods and read by
// one lowering pass (scheduler/BuildLoopNest). Nothing here computes.

#include "dsl/IR.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace coalesce {

/// `old` becomes two loops: outer in [0, ceil(extent / factor)) and inner in
/// [0, factor), with old = outer * factor + inner.
struct Split {
  std::string old_var, outer, inner;
  int factor = 1;
  bool is_rvar = false;
  /// The inverse: `outer` and `inner` (of extent `factor`) become one loop
  /// `old_var` in [0, extent(outer) * factor), with outer = old / factor and
  /// inner = old % factor.
  bool is_fuse = false;
};

/// One loop of a stage, after splits.
struct Dim {
  std::string var;
  ForKind kind = ForKind::Serial;
  int gpu_dim = -1;
  bool is_rvar = false;
  /// True for loops copied from the consumer by compute_at (the producer
  /// computes its values on the consumer's tile, one per consumer point).
  bool mirrored = false;
};

/// How a staged tile is laid out in shared memory: its arrangement only.
/// How tiles get there, and how many are in flight, is the staging's
/// TileCopies.
struct SharedLayout {
  /// Store a tile with its last two dimensions swapped: A's [m][k] tile
  /// becomes [k][m] (a batch's [b][m][k], b one point, [b][k][m]), so that
  /// the inner product reads consecutive m (vector loads).
  bool transposed = false;
  /// Extra elements after each row of the tile, so that the copy's stores
  /// (or the reads) of one warp fall in different banks.
  int padding = 0;
};

// How a staged input's tiles reach shared memory: one closed set of
// pipelines (TileCopies). Every input staged at one loop shares its copies
// and barriers, so they all name the same pipeline (scheduler/CheckStaging
// holds every rule that relates them).
//
// `zero_fill`: elements of the tile outside the input are 0 instead of the
// nearest edge value (clamping), so a tile that overhangs the end of a
// reduction adds nothing: what a tensor-core step, which cannot be guarded
// per element, needs at a ragged K. The TMA always writes 0 there.

/// One buffer: every thread copies its part of the tile, the block meets at
/// a barrier, the tile is used, and the block meets again.
struct OneBuffer {
  bool zero_fill = false;
};

/// Two buffers: each thread fetches its part of the next tile into
/// registers while the current one is used, then stores it; one barrier
/// per step.
struct RegisterDoubleBuffer {
  bool zero_fill = false;
};

/// `stages` buffers (2 to 8) filled with asynchronous copies (cp.async on
/// the GPU), stages - 1 tiles in flight while one is used: 2 is double
/// buffering, 3 or more a deeper software pipeline.
struct AsyncCopies {
  int stages = 2;
  bool zero_fill = false;
};

/// Warps of their own, past the MMA warps in the block, that issue a TMA
/// pipeline's copies, so the MMA warps only compute: each slot gets an
/// empty mbarrier besides its full one; an MMA warp arrives on a slot's
/// empty barrier once the MMAs that read it have completed, and the issuing
/// thread waits for that before refilling the slot (warp specialization).
struct ProducerWarps {
  int warps = 4; ///< 1 to 4
  /// With 4 warps (one warpgroup): register reallocation. The producer
  /// warpgroup gives its registers back down to this many per thread
  /// (setmaxnreg, a multiple of 8 from 24 to 256) and leaves the kernel
  /// after its copies; the MMA warpgroups take what that frees (the compiler
  /// computes their count from the launch's registers, which the output's
  /// gpu_min_blocks_per_sm fixes). 0: no reallocation.
  int registers = 0;
};

/// Whether the TMA reads an input itself or a copy of it that a kernel of
/// its own makes first, before the output's, into a workspace whose rows are
/// padded with zeros to 128-byte multiples (scheduler/PadTmaInputs.h).
enum class PaddedCopy : uint8_t {
  /// The input itself. Where its rows are not whole 16-byte multiples, the
  /// TMA cannot describe it, and the kernel takes cp.async copies instead:
  /// both pipelines are in the loop nest, a branch on the rows picks one.
  Never,
  /// The copy, on every launch: one read and one write of the input, also
  /// where its rows need no padding. What a tf32 MMA that rounds needs (the
  /// copy rounds, and transposes a K x N B), and the faster form where the
  /// rows are known to be ragged (a bf16 row of 4097 elements).
  Always,
  /// The copy on the launches whose rows are not whole 16-byte multiples
  /// (the copy's rows are 0 on the others, so its kernel is not launched),
  /// the input itself elsewhere; each TMA copy picks its source by the same
  /// test. One pipeline in the kernel instead of two: for sizes given at run
  /// time. Not for copies that round or transpose (those are needed always).
  WhereRowsAreRagged,
};
const char *padded_copy_name(PaddedCopy copy);

/// `stages` slots (3 to 8) of the 128-byte swizzled tiles warpgroup MMAs
/// read, each filled by the tensor memory accelerator (one thread's bulk
/// copy per 64-column box) and completing on an mbarrier of its own. Where
/// an input's rows are not whole 16-byte multiples, the TMA cannot describe
/// it: `padded_copy` says what the kernel reads then.
struct TmaCopies {
  int stages = 3;
  /// Who issues the copies: warps of their own, or (none) the MMA warps'
  /// first thread, after a barrier per step.
  std::optional<ProducerWarps> producer;
  /// What the TMA reads (above).
  PaddedCopy padded_copy = PaddedCopy::Never;
  /// On an output scheduled with gpu_cluster: the input's tile is the same
  /// for every block of a cluster (it does not depend on the clustered block
  /// loop), so each block copies 1 / C of its rows and the TMA writes them
  /// into the shared memory of all C blocks: the input crosses the L2 once
  /// per cluster instead of once per block.
  bool multicast = false;
};

/// The pipeline of a staged input: exactly one of the above.
using TileCopies = std::variant<OneBuffer, RegisterDoubleBuffer, AsyncCopies, TmaCopies>;

/// Tiles of the input in shared memory at once: 1, 2, or the stages.
int tile_buffers(const TileCopies &copies);
/// Whether the tile holds 0 outside the input (always, for the TMA).
bool zero_fills(const TileCopies &copies);
/// The TMA pipeline, or null for the other copies.
const TmaCopies *tma_copies(const TileCopies &copies);
/// Warps of their own issuing the copies (0: none).
int producer_warp_count(const TileCopies &copies);
/// The copies in words, for messages: "one buffer", "3 TMA stages", ...
std::string describe(const TileCopies &copies);
/// Same pipeline, the per-input choices (zero_fill, padded_copy,
/// multicast) aside: what inputs staged at one loop must agree on.
bool same_pipeline(const TileCopies &a, const TileCopies &b);

/// A request to copy an input's tile into shared memory once per iteration
/// of loop `at_loop` of this stage, and read it from there inside the loop.
struct SharedStaging {
  std::string input;
  std::string at_loop;
  SharedLayout layout;
  TileCopies copies;
};

/// The loops a consumer's mma_tile made, as their user names. Every lane of a
/// warp owns the tile elements (row, column) = (8 frag_i + lane / 4,
/// 2 (lane % 4) + frag_j) of each 16 x 8 instruction tile (mma_i, mma_j) of
/// its warp's tile: the fragment layout of the accumulator registers.
struct MmaLayout {
  MmaKind kind = MmaKind::None;
  std::string warp, lane, mma_i, mma_j, frag_i, frag_j;
  int warp_m = 0, warp_n = 0; ///< the tile of one warp
  int warps_m = 0, warps_n = 0;
  /// The Func's dimension the tile's rows (the instruction's M) run along:
  /// 0, the rows of out(i, j), so A(i, k)'s rows fill M; or 1 (swap-AB), so
  /// B's rows do and A's fill the instruction's N. The columns run along
  /// the other one. With batch dimensions first (out(b, i, j)), these
  /// count them: rows_dim is then 1 or 2.
  int rows_dim = 0;
  int columns_dim = 1; ///< the Func's dimension the tile's columns run along
};

/// A reduction stage mapped onto warp MMA instructions: the loops k_inner
/// (the instruction's depth), frag_i and frag_j become one instruction per
/// (mma_i, mma_j) and k step.
struct MmaRequest {
  MmaKind kind = MmaKind::None;
  std::string k_inner; ///< the reduction loop of extent mma_k(kind)
};

/// The schedule of one definition (the pure one, or one update).
struct StageSchedule {
  std::vector<Split> splits;
  std::vector<Dim> dims; ///< outermost first
  std::vector<SharedStaging> staged_inputs;
  /// The reduction variables of an update, in the algorithm's order (first
  /// use), which fixes the order of summation.
  std::vector<std::string> reduction_vars;
  /// The user accepts a different floating-point summation order.
  bool allow_reassociation = false;
  /// The user means a term that does not depend on the reduction variable to
  /// be added once per reduction step (`f += g(r) + c` adds c extent times).
  bool allow_reduction_invariant_terms = false;
  /// Pure stage: the fragment layout made by mma_tile.
  MmaLayout mma_layout;
  /// Update stage: the reduction mapped onto MMA instructions.
  MmaRequest mma;

  /// The split of the stage's (first) reduction variable, or nullptr: for
  /// an MMA stage, its k steps (outer loop `ko`, factor the k step).
  const Split *reduction_split() const {
    for (const Split &split : splits)
      if (split.is_rvar && !reduction_vars.empty() && split.old_var == reduction_vars.front())
        return &split;
    return nullptr;
  }
};

/// The extent of a loop made by this stage's splits and fuses when it is a
/// known constant (the inner loop of a split, the outer loop of a split of
/// such a loop, a fuse of two), else 0. The stage's own variables have
/// extents known only at run time.
int constant_extent(const StageSchedule &stage, const std::string &var);

/// Threads per warp.
inline constexpr int kWarpSize = 32;

/// Why warps of warp_rows x warp_columns threads are not a bijection of a
/// block's rows x columns threads (a warp has 32 threads; the warp tile
/// must tile the grid), or "" when they are. The one place gpu_thread_warps
/// and the GEMM tiling check a warp layout.
std::string warp_layout_error(int rows, int columns, int warp_rows, int warp_columns);

/// Where a Func is computed.
enum class Placement { Inline, Root, At };

/// How the slices of a reduction split across GPU blocks are combined.
enum class SplitKMode {
  /// Each slice writes its partial sums to its own part of the workspace;
  /// the last block of an output tile to finish adds them in slice order
  /// (0, 1, ..., S - 1): the same bits on every run.
  Deterministic,
  /// Each slice adds its partial sums into one zeroed workspace tile with
  /// float atomics; the last block reads the total and zeroes the tile
  /// again. The order of the additions is the order the blocks finish in,
  /// so the low bits may differ from run to run.
  Atomic,
  /// Each slice writes its partial sums to its own part of the workspace,
  /// as in Deterministic mode, and nothing else; a kernel of its own, run
  /// after, adds every element's slices in slice order and runs the
  /// epilogue, spread over the whole output rather than one block per tile:
  /// the same bits as Deterministic mode, for one more launch. What large
  /// tiles cut into many slices need, where one block's combine of the
  /// tile's slices would take longer than its share of the sum.
  CombineKernel,
};
const char *split_k_mode_name(SplitKMode mode);
/// Every mode, for parsers of the names above.
inline constexpr SplitKMode kSplitKModes[] = {SplitKMode::Deterministic, SplitKMode::Atomic, SplitKMode::CombineKernel};

/// How an output's GPU blocks write their tiles (Func::gpu_tile_stores).
enum class TileStores {
  /// Each thread stores its own elements, where its loops put them.
  Direct,
  /// A block whose whole tile lies inside the output writes the tile into
  /// shared memory, then copies it out in 16-byte vectors, each warp a run
  /// of whole rows: every store fills its memory sectors, where the
  /// accumulators' fragment layout scatters each thread's elements over
  /// eight rows (scheduler/StageOutputTiles.h). Blocks on the ragged edge
  /// store directly.
  ThroughShared,
  /// A block whose whole tile lies inside the output writes the sums its
  /// epilogue reads (each Func the output's definition reads, in its own
  /// type: the f32 accumulators) into shared memory, then computes the
  /// epilogue in the copy-out, one 16-byte vector of the output per step of
  /// a loop that is not unrolled: the epilogue's code appears once per
  /// vector rather than once per element a thread holds (a 128 x 256 tile
  /// of two warpgroups holds 128 per thread), which is most of a GELU
  /// kernel's instructions and compile time. Twice the shared-memory bytes
  /// of ThroughShared for a 16-bit output. Blocks on the ragged edge store
  /// directly.
  SumsThroughShared,
};
const char *tile_stores_name(TileStores stores);
/// Every choice, for parsers of the names above.
inline constexpr TileStores kTileStores[] = {TileStores::Direct, TileStores::ThroughShared,
                                             TileStores::SumsThroughShared};

/// How the MMA warps of an output's persistent blocks share the block's
/// tiles (Func::gpu_consumer_schedule).
enum class ConsumerSchedule {
  /// All of them compute each tile together, one tile after another.
  Together,
  /// Two groups of them, each as many warps as the tiling's MMA warps (one
  /// warpgroup), take the block's tiles in turn: the first group the even
  /// tiles, the second the odd. The groups' main loops run one after the
  /// other (each waits on a named barrier the other arrives on after its
  /// last wait for a full slot), so one group's epilogue runs while the
  /// other's MMAs run. Needs a persistent grid (gpu_persistent_blocks) and
  /// TMA copies issued by producer warps (ProducerWarps), which fill one
  /// pipeline for both groups.
  PingPong,
};
const char *consumer_schedule_name(ConsumerSchedule schedule);
/// Every choice, for parsers of the names above.
inline constexpr ConsumerSchedule kConsumerSchedules[] = {ConsumerSchedule::Together, ConsumerSchedule::PingPong};

/// A reduction of `producer` split across GPU blocks (split_k, recorded on
/// the consumer that fuses it): its reduction variable `rvar` is cut into
/// `slices` contiguous ranges, one per block of a new block loop
/// `slice_var` (GPU z) just inside the consumer's fuse site. Each block
/// computes its slice's partial sums; the epilogue runs once per element,
/// after the combine.
///
/// With `tail_iterations` > 0 (split_k_tail) only the tiles of the last
/// `tail_iterations` iterations of the output's block loop `tail_loop` are
/// split; every other tile runs whole in one block, with no partial sums,
/// and no slice loop is added: the tail loop's blocks become work units,
/// each split tile's slices first, then the whole tiles (the data-parallel
/// and split hybrid of stream-K, for a last wave that would leave most
/// multiprocessors idle).
struct SplitReduction {
  std::string producer, rvar, slice_var;
  int slices = 0; ///< 0: no split
  SplitKMode mode = SplitKMode::Deterministic;
  std::string tail_loop;
  int tail_iterations = 0; ///< 0: every tile is split
  bool requested() const { return slices > 0; }
  bool splits_tail_only() const { return tail_iterations > 0; }
};

struct FuncSchedule {
  Placement placement = Placement::Inline;
  bool placement_set = false; ///< false: the default (inline if pure, else root)
  std::string at_func, at_var; ///< for Placement::At
  /// The consumer's loops at the moment compute_at mirrored them, to detect a
  /// consumer rescheduled afterwards.
  std::vector<std::string> mirrored_from;
  MemoryType memory = MemoryType::Auto;
  std::vector<StageSchedule> stages; ///< [0] pure, [1..] updates
  /// Explicit extents of the pure dimensions, overriding inference (output only).
  std::vector<Expr> bounds;
  /// out = f(acc + b): start acc's reduction from b instead of adding b after
  /// it (fold_bias_into_init, applied by the pass of that name).
  bool fold_bias = false;
  /// For the output: blocks of its kernels each multiprocessor should hold
  /// at once (0: whatever the register use allows).
  int min_blocks_per_sm = 0;
  /// For the output: its blocks run in groups of this many block rows
  /// (gpu_block_groups; 0: row by row).
  int block_group_rows = 0;
  /// For the output: its tiles run on at most this many blocks, each
  /// walking tiles a grid apart (gpu_persistent_blocks; 0: a block a tile).
  int persistent_blocks = 0;
  /// For the output: its blocks along block loop `cluster_var` run in
  /// clusters of `cluster_blocks` (gpu_cluster; 0: no clusters), whose TMA
  /// copies of an input staged with TmaCopies::multicast are shared.
  std::string cluster_var;
  int cluster_blocks = 0;
  /// For the output: whether its per-element statements get a copy without
  /// bounds guards for blocks whose tile lies inside (partition_full_tiles;
  /// unset: yes).
  std::optional<bool> partition_full_tiles;
  /// For the output: how its blocks write their tiles (gpu_tile_stores).
  TileStores tile_stores = TileStores::Direct;
  /// For the output: how its persistent blocks' MMA warps share the tiles
  /// (gpu_consumer_schedule).
  ConsumerSchedule consumer_schedule = ConsumerSchedule::Together;
  /// For the consumer of a split reduction: the split (split_k).
  SplitReduction split_k;
  /// The Func whose update's loop nest this Func's update shares
  /// (fuse_reduction_with; "": none).
  std::string fused_reduction_with;
};

} // namespace coalesce
