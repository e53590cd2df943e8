#include "scheduler/StageWithTma.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/Input.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>

namespace coalesce {

namespace {

// Elements of one 128-byte row of a swizzled tile (64 16-bit, 32 f32): the
// innermost extent of every box (the TMA's 128-byte swizzle spans one such
// row).
int box_columns(Type type) { return 128 / type.bytes(); }

Stmt call(Intrinsic which, std::vector<Expr> args = {}) {
  return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
}

class Builder {
public:
  explicit Builder(const TmaPipeline &p) : p_(p), loop_var_(Variable::make(Int(32), p.loop->name)) {}

  Stmt build() const {
    Stmt tma = p_.producer_warps > 0 ? warp_specialized().whole() : issued_by_first_thread();
    Expr describable = describable_condition();
    Stmt result = describable.defined() ? IfThenElse::make(describable, tma, fallback()) : tma;
    if (p_.producer_warps > 0)
      result = Allocate::make(p_.empty_barriers, UInt(64), MemoryType::Shared, {Expr(p_.stages)}, result);
    return Allocate::make(p_.barriers, UInt(64), MemoryType::Shared, {Expr(p_.stages)}, result);
  }

  TmaPipelineAcrossTiles across_tiles() const {
    COALESCE_INTERNAL_ASSERT(p_.producer_warps > 0 && p_.steps_before.defined(),
                             "a TMA pipeline across tiles without producer warps or its steps before the tile");
    TmaPipelineAcrossTiles parts;
    parts.describable = describable_condition();
    Parts tma = warp_specialized();
    parts.setup = tma.setup;
    parts.per_tile = tma.per_tile;
    parts.teardown = tma.teardown;
    parts.fallback_setup = fallback_setup();
    parts.fallback_per_tile = fallback_per_tile();
    parts.barrier_arrays = {p_.barriers, p_.empty_barriers};
    return parts;
  }

private:
  // What runs once before, per tile, once after.
  struct Parts {
    Stmt setup, per_tile, teardown;
    Stmt whole() const { return Block::make({setup, per_tile, teardown}); }
  };

  // Padded copies are always describable; without an input that is not,
  // the cp.async copies are left out (undefined).
  Expr describable_condition() const {
    Expr describable;
    for (const TmaTile &tile : p_.tiles) {
      if (tile.padded)
        continue;
      Expr d = tma_describable(*tile.input);
      describable = describable.defined() ? (describable && d) : d;
    }
    return describable.defined() ? simplify(describable) : describable;
  }

  // The cp.async pipeline. The producer warps have nothing to do in it:
  // with register reallocation they give their registers back and leave at
  // once, as after the TMA pipeline, so the code after both (the epilogue)
  // is reached with the same registers (reallocate_registers).
  Stmt fallback() const { return Block::make({fallback_setup(), fallback_per_tile()}); }
  Stmt fallback_setup() const {
    if (p_.producer_warps == 0)
      return Stmt();
    return boundary(ProducerPoint::Idle, producer_threads("fallback_registers", hole(), false),
                    all_threads("fallback_registers", hole()));
  }
  Stmt fallback_per_tile() const { return p_.fallback; }

  // A point of the producers' program, for reallocate_registers.
  Stmt boundary(ProducerPoint point, Stmt producers, Stmt consumers) const {
    return ProducerBoundary::make(point, std::move(producers), std::move(consumers), p_.producer_registers, p_.stage,
                                  p_.loop->name);
  }
  // The body of a boundary's thread loops, which reallocate_registers fills.
  static Stmt hole() { return Block::make(std::vector<Stmt>{}); }

  // The MMA threads' first thread issues every copy, after a block-wide
  // barrier per step.
  Stmt issued_by_first_thread() const {
    const For *op = p_.loop;
    Expr end = op->min + op->extent;
    const int stages = p_.stages;

    std::vector<Stmt> prologue;
    std::vector<Stmt> inits;
    for (int s = 0; s < stages; ++s)
      inits.push_back(call(Intrinsic::MbarrierInit, {barrier(s), Expr(1)}));
    inits.push_back(call(Intrinsic::MbarrierInitFence));
    prologue.push_back(one_thread("init", Block::make(inits)));
    prologue.push_back(step_barrier("init_barrier"));
    for (int s = 0; s + 1 < stages; ++s) {
      Expr at = simplify(op->min + s);
      prologue.push_back(
          IfThenElse::make(simplify(at < end), one_thread(str_cat("first", s), issue(at, Expr(s), str_cat("first", s)))));
    }

    // Step ko: wait for its tile; compute (the MMAs of step ko - 1 have
    // completed after the step's own wait, see mma_groups_in_flight); once
    // every thread is past that, refill the slot step ko - 1 read.
    Expr next = simplify(loop_var_ + (stages - 1));
    Expr next_slot = simplify((relative() + (stages - 1)) % stages);
    Stmt step = Block::make({all_threads("wait", call(Intrinsic::MbarrierWait, {barrier(slot()), parity()})), p_.body,
                             step_barrier("step_barrier"),
                             IfThenElse::make(next < end, one_thread("next", issue(next, next_slot, "next")))});
    return Block::make({Block::make(prologue), steps(step, step, Stmt()), teardown({p_.barriers})});
  }

  // The blocks of a cluster share multicast tiles: each writes into the
  // others' slots, so the barrier that frees a slot is the cluster's.
  bool multicast() const { return cluster_blocks() > 1; }
  Stmt step_barrier(const std::string &use) const {
    return multicast() ? all_threads(use, call(Intrinsic::ClusterBarrier)) : Barrier::make();
  }

  // Producer warps issue the copies; the MMA warps release each slot on
  // its empty barrier (StageWithTma.h). Across tiles, step t of the
  // pipeline is the block's (steps_before + t)-th: its slot and phases
  // follow from that.
  Parts warp_specialized() const {
    // With multicast tiles, a slot of every block of the cluster is
    // refilled by each block's producer: a slot is free once the MMA warps
    // of all of them released it, so each releases it in all of them.
    const int cluster = cluster_blocks();
    const For *op = p_.loop;
    Expr end = op->min + op->extent;
    const int stages = p_.stages;
    const int in_flight = p_.mma_groups_in_flight;
    COALESCE_INTERNAL_ASSERT(in_flight <= 1 && in_flight < stages, "a pipeline of ", stages, " slots with ",
                             in_flight, " steps of MMAs in flight");

    std::vector<Stmt> inits;
    for (int s = 0; s < stages; ++s) {
      inits.push_back(call(Intrinsic::MbarrierInit, {barrier(s), Expr(1)}));
      inits.push_back(call(Intrinsic::MbarrierInit, {empty(s), Expr(mma_warps() * cluster)}));
    }
    inits.push_back(call(Intrinsic::MbarrierInitFence));
    std::vector<Stmt> setup = {one_thread("init", Block::make(inits)), Barrier::make()};
    if (cluster > 1) {
      // No block arrives on a peer's barriers, or copies into its slots,
      // before the peer has initialized them: every thread of the cluster
      // meets once, both roles.
      setup.push_back(all_threads("cluster_init", call(Intrinsic::ClusterBarrier)));
      setup.push_back(producer_threads("cluster_init", call(Intrinsic::ClusterBarrier), false));
    }
    // The producers' program starts: reallocate_registers may have each
    // warpgroup reallocate its registers here, once.
    setup.push_back(boundary(ProducerPoint::Start, producer_threads("producer_registers", hole(), false),
                             all_threads("registers", hole())));

    // The first S steps of the run. A slot that an earlier tile used is
    // refilled once the MMAs of the step S before have released it: phase
    // (step / S - 1) of its empty barrier.
    std::vector<Stmt> first;
    for (int s = 0; s < stages; ++s) {
      Expr at = simplify(op->min + s), step = steps_before() + s;
      Expr slot = simplify(step % stages);
      Stmt fill = issue(at, slot, str_cat("first", s));
      Expr reused = simplify(step >= stages);
      if (!is_const(reused, 0))
        fill = Block::make({IfThenElse::make(reused, call(Intrinsic::MbarrierWait,
                                                          {empty(slot), simplify((step / stages + 1) % 2)})),
                            fill});
      first.push_back(IfThenElse::make(simplify(at < end), fill));
    }

    // Step ko reads slot ko % S; after its wait, the MMAs of step
    // ko - in_flight are complete and their slot is released. The producer
    // refills slot ko % S with tile ko + S once step ko's release
    // completes phase (ko / S) of its empty barrier.
    Expr released = simplify(relative() - in_flight);
    Stmt release = warp_leaders("release", arrive(empty(simplify(released % stages))));
    Expr refill = simplify(loop_var_ + stages);
    Stmt produce = producer_thread(
        "producer_next", IfThenElse::make(refill < end, Block::make({call(Intrinsic::MbarrierWait, {empty(slot()), parity()}),
                                                           issue(refill, slot(), "next")})));
    Stmt wait = all_threads("wait", call(Intrinsic::MbarrierWait, {barrier(slot()), parity()}));
    // Steps before `in_flight` release nothing: only the peeled first step
    // (in_flight is 0 or 1). The last step's MMAs complete after the loop
    // (tensorize_mma's wait there): its slot is released then, so that a
    // later tile's copy may refill it.
    Stmt steady = Block::make({wait, p_.body, release, produce});
    Stmt head = in_flight > 0 ? Block::make({wait, p_.body, produce}) : steady;
    Stmt last;
    if (in_flight > 0)
      last = warp_leaders("release_last", arrive(empty(simplify((steps_before() + op->extent - 1) % stages))));

    Parts parts;
    parts.setup = Block::make(setup);
    parts.per_tile = Block::make({producer_thread("producer_first", Block::make(first)), steps(head, steady, last)});
    Stmt last_releases;
    if (cluster > 1) {
      // The peers' MMA warps release slots on this block's barriers until
      // their last step: the barriers are invalidated, and the block
      // leaves, only once every slot's last release has completed, so no
      // arrival lands on a barrier that is gone. Across a persistent
      // block's tiles, the last use is of the run's last step (the
      // cluster's blocks walk as many tiles, PersistentBlocks.h).
      const Expr run = p_.steps_before.defined() ? p_.run_steps : op->extent;
      COALESCE_INTERNAL_ASSERT(run.defined(), "a multicast pipeline across tiles without its run's steps");
      std::vector<Stmt> waits;
      for (int s = 0; s < stages; ++s) {
        Expr last_use = simplify(s + (run - 1 - s) / stages * stages);
        waits.push_back(IfThenElse::make(simplify(s < run),
                                         call(Intrinsic::MbarrierWait, {empty(s), simplify(last_use / stages % 2)})));
      }
      last_releases = Block::make(waits);
    }
    parts.teardown = teardown({p_.barriers, p_.empty_barriers}, last_releases);
    return parts;
  }

  // An MMA warp's release of a slot: in every block of the cluster that
  // multicast copies refill.
  Stmt arrive(const Expr &barrier) const {
    int cluster = cluster_blocks();
    return cluster > 1 ? call(Intrinsic::MbarrierArrive, {barrier, Expr(cluster)})
                       : call(Intrinsic::MbarrierArrive, {barrier});
  }
  int cluster_blocks() const {
    int blocks = 1;
    for (const TmaTile &t : p_.tiles)
      blocks = std::max(blocks, t.multicast);
    return blocks;
  }

  // The loop of steps, its first step `head` peeled where MMAs stay in
  // flight across steps, then `last` (where steps ran).
  Stmt steps(const Stmt &head, const Stmt &steady, const Stmt &last) const {
    const For *op = p_.loop;
    Stmt loop = For::make(op->name, op->min, op->extent, op->for_kind, steady, op->gpu_dim, op->reduction_of, op->role);
    if (p_.mma_groups_in_flight == 0)
      return last.defined() ? Block::make({loop, IfThenElse::make(0 < op->extent, last)}) : loop;
    // As in the cp.async pipeline: the loop's head is reached only with
    // the accumulators defined by MMAs, or ptxas serializes them (C7515).
    Stmt first = substitute({{op->name, op->min}}, head);
    return IfThenElse::make(0 < op->extent,
                            Block::make({first,
                                         For::make(op->name, simplify(op->min + 1), simplify(op->extent - 1),
                                                   op->for_kind, steady, op->gpu_dim, op->reduction_of, op->role),
                                         last}));
  }

  // After the last step: the barriers' invalidation. Every thread is past
  // its last wait before the barriers are invalidated (a later pipeline
  // over the same memory initializes them again), and past its last read
  // before the tiles are reused.
  std::vector<Stmt> invalidations(const std::vector<std::string> &arrays) const {
    std::vector<Stmt> invals;
    for (const std::string &array : arrays)
      for (int s = 0; s < p_.stages; ++s)
        invals.push_back(call(Intrinsic::MbarrierInval, {Load::make(UInt(64), array, {Expr(s)})}));
    return invals;
  }
  // `before` runs in the invalidating thread first.
  Stmt teardown(const std::vector<std::string> &arrays, const Stmt &before = Stmt()) const {
    std::vector<Stmt> invals = invalidations(arrays);
    invals.insert(invals.begin(), before);
    // With producer warps the cluster's blocks meet on the empty barriers
    // instead (`before`), and the producers, which have their own program,
    // meet the others at a barrier of the block, after their program's end
    // (where reallocate_registers may have them leave instead).
    if (p_.producer_warps > 0)
      return Block::make({boundary(ProducerPoint::Leave, producer_threads("producer_exit", hole(), false),
                                   all_threads("producer_exit", hole())),
                          Barrier::make(), one_thread("inval", Block::make(invals)), Barrier::make()});
    return Block::make({step_barrier("end_barrier"), one_thread("inval", Block::make(invals)), Barrier::make()});
  }

  const TmaPipeline &p_;
  Expr loop_var_;

  // The steps of the run before this loop's first (0: a run per loop).
  Expr steps_before() const { return p_.steps_before.defined() ? p_.steps_before : Expr(0); }
  Expr relative() const { return simplify(steps_before() + (loop_var_ - p_.loop->min)); }
  Expr slot() const { return simplify(relative() % p_.stages); }
  Expr parity() const { return simplify((relative() / p_.stages) % 2); }
  Expr empty(const Expr &slot) const { return Load::make(UInt(64), p_.empty_barriers, {slot}); }

  Expr barrier(const Expr &slot) const { return Load::make(UInt(64), p_.barriers, {slot}); }

  // `s` in the block's thread loops (each thread runs it), under names of
  // their own.
  Stmt all_threads(const std::string &use, Stmt s, const Expr &only_first = Expr()) const {
    if (only_first.defined())
      s = IfThenElse::make(only_first, s);
    for (auto t = p_.threads.rbegin(); t != p_.threads.rend(); ++t)
      s = For::make(thread_name(use, t->name), t->min, t->extent, ForKind::GpuThread, s, t->gpu_dim, {},
                    LoopRole::StagingCopy);
    return s;
  }

  // `s` run by the block's first thread.
  Stmt one_thread(const std::string &use, Stmt s) const {
    Expr first;
    for (const BlockThreadLoop &t : p_.threads) {
      Expr is_first = Variable::make(Int(32), thread_name(use, t.name)) == t.min;
      first = first.defined() ? (first && is_first) : is_first;
    }
    return all_threads(use, std::move(s), first);
  }

  // The threads of the MMA warps (whole warps: warpgroup MMAs take whole
  // warpgroups), and their warps.
  int64_t mma_threads() const {
    int64_t n = 1;
    for (const BlockThreadLoop &t : p_.threads)
      n *= *as_const_int(t.extent);
    COALESCE_INTERNAL_ASSERT(n % 32 == 0, "a TMA pipeline's MMA threads are ", n, ", not whole warps");
    return n;
  }
  int mma_warps() const { return static_cast<int>(mma_threads() / 32); }

  // The thread loop of the outermost GPU dimension the MMA threads use: the
  // one the producer warps extend, past its extent.
  const BlockThreadLoop &outermost_dim() const {
    const BlockThreadLoop *outer = &p_.threads.front();
    for (const BlockThreadLoop &t : p_.threads)
      if (t.gpu_dim > outer->gpu_dim)
        outer = &t;
    return *outer;
  }

  // `s` run by the first thread of each MMA warp: the thread's index in
  // the block (x fastest, as the hardware numbers threads into warps) is a
  // multiple of 32.
  Stmt warp_leaders(const std::string &use, Stmt s) const {
    std::vector<const BlockThreadLoop *> by_dim;
    for (const BlockThreadLoop &t : p_.threads)
      by_dim.push_back(&t);
    std::sort(by_dim.begin(), by_dim.end(),
              [](const BlockThreadLoop *a, const BlockThreadLoop *b) { return a->gpu_dim < b->gpu_dim; });
    Expr linear = 0;
    int64_t stride = 1;
    for (const BlockThreadLoop *t : by_dim) {
      linear = linear + (Variable::make(Int(32), thread_name(use, t->name)) - t->min) * static_cast<int>(stride);
      stride *= *as_const_int(t->extent);
    }
    return all_threads(use, std::move(s), simplify(linear % 32 == 0));
  }

  // `s` run by the first producer thread. The producer warps extend the
  // outermost GPU dimension of the MMA threads past its extent; the other
  // dimensions keep their loops, so `rows` steps of the outer one make
  // producer_warps warps.
  Stmt producer_thread(const std::string &use, Stmt s) const { return producer_threads(use, std::move(s), true); }

  // `s` run by every producer thread, or (only_first) by the first.
  Stmt producer_threads(const std::string &use, Stmt s, bool only_first) const {
    const BlockThreadLoop &outer = outermost_dim();
    int64_t per_row = mma_threads() / *as_const_int(outer.extent);
    int64_t producer_threads = 32 * static_cast<int64_t>(p_.producer_warps);
    if (producer_threads % per_row != 0)
      user_error("in schedule for ", p_.stage, ": the TMA copies staged at '", loop_short_name(p_.loop->name), "' ask for ", p_.producer_warps,
                 " producer warps, but the MMA threads' inner thread loops make ", per_row,
                 " threads per step of their outermost one ('", loop_short_name(outer.name),
                 "'), which does not divide ", producer_threads,
                 ": choose producer warps whose threads are a multiple of ", per_row);
    Expr first;
    for (const BlockThreadLoop &t : p_.threads) {
      Expr start = &t == &outer ? simplify(t.min + outer.extent) : t.min;
      Expr is_first = Variable::make(Int(32), thread_name(use, t.name)) == start;
      first = first.defined() ? (first && is_first) : is_first;
    }
    if (only_first)
      s = IfThenElse::make(first, s);
    for (auto t = p_.threads.rbegin(); t != p_.threads.rend(); ++t) {
      std::string name = thread_name(use, t->name);
      if (&*t == &outer)
        s = For::make(name, simplify(t->min + outer.extent), static_cast<int>(producer_threads / per_row),
                      ForKind::GpuThread, s, t->gpu_dim, {}, LoopRole::ProducerWarps);
      else
        s = For::make(name, t->min, t->extent, ForKind::GpuThread, s, t->gpu_dim, {}, LoopRole::StagingCopy);
    }
    return s;
  }

  std::string thread_name(const std::string &use, const std::string &loop) const {
    return str_cat(p_.barriers, ".", use, ".", loop);
  }

  // The copies of tile `at` (the loop's value) of every input into slot
  // `slot`, announced to the slot's barrier first.
  Stmt issue(const Expr &at, const Expr &slot, const std::string &use) const {
    std::map<std::string, Expr> shift = {{p_.loop->name, at}};
    int bytes = 0;
    std::vector<Stmt> copies;
    for (const TmaTile &tile : p_.tiles) {
      const int columns = box_columns(tile.input->type);
      // Rows and columns are the tile's last two dimensions; those before
      // (a batch) span one element.
      const size_t row_dim = tile.extent.size() - 2;
      COALESCE_INTERNAL_ASSERT(
          tile.extent.size() >= 2 && tile.extent.size() <= 5 &&
              std::all_of(tile.extent.begin(), tile.extent.begin() + row_dim, [](int64_t e) { return e == 1; }) &&
              tile.extent[row_dim + 1] % columns == 0 && tile.extent[row_dim] <= 256,
          "tile of '", tile.input->name, "' cannot be copied in TMA boxes");
      int rows = static_cast<int>(tile.extent[row_dim]);
      if (rows % (8 * tile.multicast) != 0)
        user_error("in schedule for ", p_.stage, ": the TMA copies staged at '", loop_short_name(p_.loop->name), "' multicast '", tile.input->name,
                   "' to the ", tile.multicast, " blocks of a cluster, each copying its share of the rows of every "
                   "box, whole groups of 8 (the 128-byte swizzle's atoms); its boxes have ", rows, " rows, not a "
                   "multiple of ", 8 * tile.multicast, ": use smaller clusters, or a larger tile");
      for (int c = 0; c < tile.extent[row_dim + 1] / columns; ++c) {
        Expr column0 = c * columns;
        std::vector<Expr> origin, coords(row_dim, Expr(0)), first(row_dim + 2, Expr(0));
        std::vector<int> box(row_dim, 1);
        for (size_t d = 0; d < tile.origin.size(); ++d)
          origin.push_back(simplify(substitute(shift, tile.origin[d]) + (d == row_dim + 1 ? column0 : Expr(0))));
        // What the copy does, element by element (the host runs this).
        std::string r = str_cat(tile.buffer, ".", use, ".box", c, ".r"), e = str_cat(tile.buffer, ".", use, ".box", c, ".e");
        coords.push_back(Variable::make(Int(32), r));
        coords.push_back(Variable::make(Int(32), e) + column0);
        first.back() = column0;
        box.push_back(rows);
        box.push_back(columns);
        Expr destination = Load::make(tile.input->type, tile.buffer, tile.shared_indices(first, slot));
        // The box copied from `source`, whose element at coords `value` gives.
        auto box_copy = [&](const std::string &source, const decltype(TmaTile::value) &value) {
          Stmt element = Store::make(tile.buffer, tile.shared_indices(coords, slot), value(coords, shift));
          Stmt copy = For::make(r, 0, rows, ForKind::Serial,
                                For::make(e, 0, columns, ForKind::Serial, element, -1, {}, LoopRole::StagingCopy), -1,
                                {}, LoopRole::StagingCopy);
          return TensorCopy::make(source, origin, box, destination, barrier(slot), copy, tile.multicast);
        };
        Stmt tensor_copy = box_copy(tile.source, tile.value);
        // The same box from the input itself, where its rows allow.
        Expr describable = tile.input_value ? simplify(tma_describable(*tile.input)) : Expr();
        if (describable.defined() && !is_const(describable, 0))
          tensor_copy = IfThenElse::make(describable, box_copy(tile.input->name, tile.input_value), tensor_copy);
        copies.push_back(tensor_copy);
        bytes += rows * columns * tile.input->type.bytes();
      }
    }
    return Block::make({call(Intrinsic::MbarrierExpectTx, {barrier(slot), Expr(bytes)}), Block::make(copies)});
  }
};

} // namespace

Stmt tma_pipeline(const TmaPipeline &p) { return Builder(p).build(); }

TmaPipelineAcrossTiles tma_pipeline_across_tiles(const TmaPipeline &p) { return Builder(p).across_tiles(); }

} // namespace coalesce
