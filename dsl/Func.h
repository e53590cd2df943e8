#pragma once
// Func: a named function over integer coordinates, defined once purely
// (`f(i, j) = ...`) and optionally updated by reductions (`f(i, j) += ...`).
// Its schedule (how loops are split, ordered and mapped, where it is
// computed) is recorded separately, by the methods below, as plain data.

#include "dsl/IR.h"
#include "dsl/Input.h"
#include "dsl/Schedule.h"
#include "dsl/Var.h"

#include <memory>
#include <string>
#include <vector>

namespace coalesce {

class Func;

/// `f(i, j)` on either side of a definition.
class FuncRef {
public:
  FuncRef(std::shared_ptr<internal::FuncContents> func, std::vector<Expr> args);
  /// Defines f purely (the first time) or adds an update definition.
  void operator=(const Expr &value);
  void operator=(const FuncRef &other) { *this = Expr(other); }
  /// f(i, j) += term: a sum reduction over the RVars in term.
  void operator+=(const Expr &term);
  /// f(i, j) *= term: a product reduction.
  void operator*=(const Expr &term);
  operator Expr() const; // NOLINT: a call of f

private:
  void add_update(const Expr &value);
  std::shared_ptr<internal::FuncContents> func_;
  std::vector<Expr> args_;
};

/// One definition's schedule: the primitives that shape its loop nest.
/// Loop lists are written outermost first.
class Stage {
public:
  Stage(std::shared_ptr<internal::FuncContents> func, int index);

  /// for x: body  ->  for outer in [0, ceil(X/factor)): for inner in [0, factor):
  ///                    let x = outer*factor + inner; if x < X: body
  Stage &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor);
  /// Splits x and y and orders the loops xo, yo, xi, yi (outermost first).
  Stage &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
              const VarOrRVar &xi, const VarOrRVar &yi, int x_factor, int y_factor);
  /// Puts the named loops in this order (outermost first); the loops not
  /// named keep their places.
  Stage &reorder(const std::vector<VarOrRVar> &outermost_first);
  /// Replaces the loop by its body repeated extent times (constant extent).
  Stage &unroll(const VarOrRVar &var);
  /// Marks the loop for vector execution (consecutive elements at once).
  Stage &vectorize(const VarOrRVar &var);
  /// Maps loops to GPU block indices; the last (innermost) one becomes x.
  Stage &gpu_blocks(const std::vector<VarOrRVar> &outermost_first);
  /// Maps loops to GPU thread indices; the last (innermost) one becomes x.
  Stage &gpu_threads(const std::vector<VarOrRVar> &outermost_first);
  /// Each thread computes a tm x tn block in registers: splits x into
  /// (tx, rx) and y into (ty, ry) by tm and tn, orders tx, ty, rx, ry and
  /// unrolls rx and ry.
  Stage &register_block(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &tx,
                        const VarOrRVar &ty, const VarOrRVar &rx, const VarOrRVar &ry, int tm,
                        int tn);
  /// The inverse of split: `outer` (directly outside `inner`) and `inner`
  /// (made by a split, so of constant extent f) become one loop `fused` in
  /// [0, extent(outer) * f), with outer = fused / f and inner = fused % f.
  Stage &fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused);
  /// Lays the tile of loops x and y (each made by a split, x outside y) out
  /// for warp-level MMA instructions of `kind`: each warp computes a
  /// warp_m x warp_n part, as (warp_m / 16) x (warp_n / 8) instruction
  /// tiles, and each of its 32 lanes owns 4 elements of every instruction
  /// tile (the accumulator fragment layout). Makes the loops
  ///   warp (gpu thread y), lane (gpu thread x), mma_i, mma_j, frag_i, frag_j
  /// (unrolled) in place of x and y. The producer computed here (by
  /// fuse_epilogue) then maps its reduction with mma().
  Stage &mma_tile(const Var &x, const Var &y, MmaKind kind, int warp_m, int warp_n, const Var &warp,
                  const Var &lane, const Var &mma_i, const Var &mma_j, const Var &frag_i, const Var &frag_j);
  /// Maps thread loops y (rows) and x (columns, directly inside y; both
  /// from splits by constants, R x C threads) to GPU threads like
  /// gpu_threads({y, x}), with each warp covering a warp_rows x
  /// warp_columns tile of the R x C grid instead of 32 consecutive threads
  /// in row order. This changes which threads share a warp (and so the
  /// shared-memory access pattern), never the result:
  ///
  ///   for y in gpu_thread.y(0, R):        for warp in gpu_thread.y(0, R*C/32):
  ///     for x in gpu_thread.x(0, C):  ->    for lane in gpu_thread.x(0, 32):
  ///       body                                let y = (warp / (C/wc))*wr + lane / wc
  ///                                           let x = (warp % (C/wc))*wc + lane % wc
  ///                                           body
  ///
  /// Legal when warp_rows * warp_columns = 32 and the warp tile tiles the
  /// grid (warp_layout_error), so every thread has exactly one place.
  Stage &gpu_thread_warps(const Var &y, const Var &x, int warp_rows, int warp_columns, const Var &warp,
                          const Var &lane);
  /// For a reduction computed on a consumer's mma_tile: splits reduction
  /// loop k into ko (steps of k_step) and k_step / mma_k instruction steps
  /// kk, and runs each step of every instruction tile as one warp MMA
  /// instruction. The instruction sums inside a step in its own order, so
  /// the stage must also allow_reassociation(); a ragged K needs the
  /// operands staged with zero_fill.
  Stage &mma(const RVar &k, const RVar &ko, const RVar &kk, int k_step);
  /// Copies the tile of `input` that the loops inside `at_loop` read into
  /// shared memory once per iteration of `at_loop`, cooperatively; `layout`
  /// may transpose or pad the tile, `copies` picks the pipeline that fills
  /// it (one buffer with a barrier before and after its use, the default;
  /// two through registers; cp.async stages; TMA stages). The rules that
  /// relate the choices (inputs staged at one loop share a pipeline, the TMA
  /// feeds warpgroup MMAs, ...) are checked when the pipeline is lowered.
  Stage &stage_in_shared(const Input &input, const VarOrRVar &at_loop, SharedLayout layout = {},
                         TileCopies copies = OneBuffer{});
  /// Accepts that this schedule changes the floating-point summation order.
  Stage &allow_reassociation();
  /// Accepts a term that is added once per reduction step (see DESIGN.md).
  Stage &allow_reduction_invariant_terms();

  /// "'acc'" or "'acc' (update 0)", for messages.
  std::string describe() const;
  int index() const { return index_; }

protected:
  StageSchedule &schedule() const;
  /// The position of loop `var` in dims, or a user_error naming the loops.
  size_t find_dim(const std::string &var, const char *primitive) const;
  void check_new_name(const std::string &var, const char *primitive) const;
  Stage &map_to_gpu(const std::vector<VarOrRVar> &vars, ForKind kind, const char *primitive);
  std::shared_ptr<internal::FuncContents> func_;
  int index_;
};

class Func {
public:
  explicit Func(std::string name);
  Func(std::shared_ptr<internal::FuncContents> contents) : contents_(std::move(contents)) {} // NOLINT

  FuncRef operator()(std::vector<Expr> args) const;
  template <typename... Args> FuncRef operator()(const Expr &first, const Args &...rest) const {
    return (*this)(std::vector<Expr>{first, Expr(rest)...});
  }

  const std::string &name() const;
  const std::shared_ptr<internal::FuncContents> &contents() const { return contents_; }
  bool has_updates() const;

  /// The schedule of update definition `index`.
  Stage update(int index = 0) const;
  /// The schedule of the pure definition (what the methods below change).
  Stage pure() const { return Stage(contents_, 0); }

  Func &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor);
  Func &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
             const VarOrRVar &xi, const VarOrRVar &yi, int x_factor, int y_factor);
  Func &reorder(const std::vector<VarOrRVar> &outermost_first);
  Func &unroll(const VarOrRVar &var);
  Func &vectorize(const VarOrRVar &var);
  Func &gpu_blocks(const std::vector<VarOrRVar> &outermost_first);
  Func &gpu_threads(const std::vector<VarOrRVar> &outermost_first);
  Func &register_block(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &tx,
                       const VarOrRVar &ty, const VarOrRVar &rx, const VarOrRVar &ry, int tm,
                       int tn);
  Func &fuse(const VarOrRVar &inner, const VarOrRVar &outer, const VarOrRVar &fused);
  Func &mma_tile(const Var &x, const Var &y, MmaKind kind, int warp_m, int warp_n, const Var &warp,
                 const Var &lane, const Var &mma_i, const Var &mma_j, const Var &frag_i, const Var &frag_j);
  Func &gpu_thread_warps(const Var &y, const Var &x, int warp_rows, int warp_columns, const Var &warp,
                         const Var &lane);

  /// Computes this Func inside loop `loop` of `consumer`, on the consumer's
  /// tile: every stage of this Func runs over the consumer's loops below
  /// `loop` (mirrored, same names), before the consumer uses the values.
  ///   for bj: for ti: for ri: out = g(f)
  ///     -> for bj: { for ti: for ri: f = ...; for ti: for ri: out = g(f) }
  /// Schedule the consumer's loops first.
  Func &compute_at(const Func &consumer, const VarOrRVar &loop);
  /// Computes all of this Func before its consumers, into a full-size buffer.
  Func &compute_root();
  /// Substitutes this Func's definition into its callers (pure Funcs only).
  Func &compute_inline();
  Func &store_in(MemoryType memory);
  /// Fixes the extent of a pure dimension (otherwise inferred from inputs).
  Func &bound(const Var &var, Expr extent);
  /// Part of the algorithm, for the pipeline's output: its buffer is a view
  /// into a larger tensor, element (x0, ..., xn) at x0 * strides[0] + ... +
  /// xn * strides[n] (outermost first; the innermost 1, the others i32
  /// constants or Params, at least 1), as BLAS's ldc: out.output_strides({ldc,
  /// 1}) writes rows ldc elements apart and nothing between them. The
  /// buffer passed for it holds every element the view reaches. After the
  /// Func's pure definition; a Func that is not the output is refused.
  Func &output_strides(std::vector<Expr> strides);

  /// Runs this Func (the epilogue) after `producer`'s reduction, on the
  /// producer's register tile: producer.compute_at(*this, loop) in registers.
  Func &fuse_epilogue(const Func &producer, const VarOrRVar &loop);
  /// For out(i, j) = f(acc(i, j) + b): starts acc's reduction from b instead
  /// of 0 and drops the addition. b is added once either way; only the
  /// rounding order changes (b first instead of last).
  Func &fold_bias_into_init();
  /// Runs this Func's update in the loop nest of `other`'s update: one nest
  /// whose innermost body updates both, so that each input value read there
  /// serves both reductions (a SwiGLU's g += A Wg and u += A Wu read A once
  /// per step). Both are computed at the same loop of one consumer, one
  /// right after the other; their update loops must match loop for loop
  /// (the same splits, order and kinds over the same reduction domain) and
  /// neither may read the other. The result is the same: each sum keeps its
  /// order. Not yet with stage_in_shared, mma() or split_k, and checked on
  /// the CPU only so far (GPU targets refuse it).
  Func &fuse_reduction_with(const Func &other);
  /// Splits the reduction `k` of `producer` (fused into this Func with
  /// fuse_epilogue at a block loop) across `slices` GPU blocks: a new block
  /// loop `slice` (GPU z) inside the fuse site runs one contiguous range of
  /// k per block (ranges of whole K steps, the last one ragged), each
  /// writing its partial sums to a workspace; the last block of each tile
  /// to finish combines the slices and runs this Func (the epilogue) once
  /// per element. Bias folded into the initial value goes into slice 0
  /// only. The summation order changes, so the producer's update must
  /// allow_reassociation(). `mode` picks the combine (SplitKMode).
  Func &split_k(const Func &producer, const VarOrRVar &k, const Var &slice, int slices,
                SplitKMode mode = SplitKMode::Deterministic);
  /// After split_k: only the tiles of the last `iterations` iterations of
  /// block loop `block_loop` are split; the others run whole, one block
  /// each, and their epilogue runs from the registers with no partial sums.
  /// The loop's blocks become work units, the split tiles' slices first
  /// and then the whole tiles (`slice` is then a value of the unit, not a
  /// loop), so that a last wave, which would hold a few whole tiles and
  /// leave most multiprocessors idle, becomes many short slices spread
  /// beside the whole tiles (stream-K's hybrid of whole tiles and split
  /// ones). Deterministic or atomic combines; the result is the split's
  /// either way.
  Func &split_k_tail(const Var &block_loop, int iterations);
  /// Whether the statements every thread of a block runs once per tile
  /// (this output's epilogue) get a second copy without their bounds
  /// guards, taken by the blocks whose whole tile is inside (on by default;
  /// scheduler/PartitionFullTiles.h). Off: one guarded copy, fewer registers
  /// live where a kernel is at its register cap. The result is the same
  /// either way.
  Func &partition_full_tiles(bool enable);
  /// How this (output) Func's GPU blocks write their tiles: directly, each
  /// thread its own elements (the default), or through shared memory
  /// (TileStores::ThroughShared): a block whose whole tile lies inside the
  /// output writes it into a shared tile, then copies it out in 16-byte
  /// vectors, whole rows per warp. Only the full-tile copy of the epilogue
  /// (partition_full_tiles) is staged; the rest stores directly. The result
  /// is the same either way.
  ///
  ///   out[i, j] = v(ii, jj)          allocate out_tile[128][264] in shared
  ///                            ->    out_tile[ii, jj] = v(ii, jj)
  ///                                  barrier
  ///                                  out[bi*128 + r, bj*256 + 8c .. +8] = load_vector(out_tile[r, 8c], 8)
  ///                                  barrier
  ///
  /// TileStores::SumsThroughShared stages the sums the epilogue reads
  /// instead, and computes the epilogue in the copy-out, a vector at a time
  /// in a loop (its code once, not once per element a thread holds):
  ///
  ///   out[i, j] = f(acc[..])         allocate acc_tile[128][264] f32 in shared
  ///                            ->    acc_tile[ii, jj] = acc[..]
  ///                                  barrier
  ///                                  for e in serial(0, 16):
  ///                                    v[l] = f(acc_tile[r, 8c + l]) for l in 0..7
  ///                                    out[bi*128 + r, bj*256 + 8c .. +8] = load_vector(v[0], 8)
  ///                                  barrier
  Func &gpu_tile_stores(TileStores stores);
  /// Asks the GPU compiler to fit `blocks` blocks of this (output) Func's
  /// kernels on each multiprocessor; it caps registers per thread to fit.
  /// 256 threads x 130 registers leaves room for one block, x 128 for two.
  Func &gpu_min_blocks_per_sm(int blocks);
  /// Runs this (output) Func's GPU blocks in groups of `rows` block rows:
  /// within a group, down a column of blocks, then the next column, so that
  /// blocks running at the same time share rows of A and column panels of B
  /// in the L2 cache. Needs two block loops (gpu_blocks({row, column})); it
  /// only reorders the blocks, so it never changes the result.
  Func &gpu_block_groups(int rows);
  /// Runs this (output) Func's tiles on at most `blocks` GPU blocks (a
  /// persistent grid): block b computes tiles b, b + blocks, b + 2 blocks,
  /// ... of the row-major (or gpu_block_groups) order, one after another.
  /// Needs two block loops; each tile is computed once either way, so it
  /// never changes the result.
  Func &gpu_persistent_blocks(int blocks);
  /// How the MMA warps of this (output) Func's persistent blocks share the
  /// block's tiles (ConsumerSchedule): PingPong doubles the MMA warps into
  /// two groups that take the tiles in turn, one group's epilogue
  /// overlapping the other's main loop. Each tile is still computed by one
  /// group, whole, so it never changes the result.
  Func &gpu_consumer_schedule(ConsumerSchedule schedule);
  /// Runs this (output) Func's GPU blocks along block loop `block` in
  /// clusters of `blocks` (2 to 8) consecutive blocks, which the GPU runs at
  /// once on neighbouring multiprocessors (sm_90 and later), so that inputs
  /// staged with TmaCopies::multicast are copied once per cluster. The
  /// block loop's extent is rounded up to whole clusters; the extra blocks
  /// compute nothing past the output's end (its guards). It never changes
  /// the result.
  Func &gpu_cluster(const Var &block, int blocks);

private:
  std::shared_ptr<internal::FuncContents> contents_;
};

} // namespace coalesce
