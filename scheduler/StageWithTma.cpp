#include "scheduler/StageWithTma.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

namespace coalesce {

namespace {

// Elements of one 128-byte row of a swizzled 16-bit tile: the innermost
// extent of every box (the TMA's 128-byte swizzle spans one such row).
constexpr int kBoxColumns = 64;

Stmt call(Intrinsic which, std::vector<Expr> args = {}) {
  return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
}

class Builder {
public:
  explicit Builder(const TmaPipeline &p) : p_(p), loop_var_(Variable::make(Int(32), p.loop->name)) {}

  Stmt build() const {
    const For *op = p_.loop;
    Expr end = op->min + op->extent;
    const int stages = p_.stages;

    std::vector<Stmt> prologue;
    std::vector<Stmt> inits;
    for (int s = 0; s < stages; ++s)
      inits.push_back(call(Intrinsic::MbarrierInit, {barrier(s), Expr(1)}));
    inits.push_back(call(Intrinsic::MbarrierInitFence));
    prologue.push_back(one_thread("init", Block::make(inits)));
    prologue.push_back(Barrier::make());
    for (int s = 0; s + 1 < stages; ++s) {
      Expr at = simplify(op->min + s);
      prologue.push_back(
          IfThenElse::make(simplify(at < end), one_thread(str_cat("first", s), issue(at, Expr(s), str_cat("first", s)))));
    }

    // Step ko: wait for its tile; compute (the MMAs of step ko - 1 have
    // completed after the step's own wait, see mma_groups_in_flight); once
    // every thread is past that, refill the slot step ko - 1 read.
    Expr relative = simplify(loop_var_ - op->min);
    Expr slot = simplify(relative % stages);
    Expr parity = simplify((relative / stages) % 2);
    Expr next = simplify(loop_var_ + (stages - 1));
    Expr next_slot = simplify((relative + (stages - 1)) % stages);
    Stmt step = Block::make({all_threads("wait", call(Intrinsic::MbarrierWait, {barrier(slot), parity})), p_.body,
                             Barrier::make(),
                             IfThenElse::make(next < end, one_thread("next", issue(next, next_slot, "next")))});
    Stmt loop = For::make(op->name, op->min, op->extent, op->for_kind, step, op->gpu_dim, op->reduction_of, op->role);
    if (p_.mma_groups_in_flight > 0) {
      // As in the cp.async pipeline: the loop's head is reached only with
      // the accumulators defined by MMAs, or ptxas serializes them (C7515).
      Stmt first = substitute({{op->name, op->min}}, step);
      loop = IfThenElse::make(0 < op->extent,
                              Block::make({first, For::make(op->name, simplify(op->min + 1), simplify(op->extent - 1),
                                                            op->for_kind, step, op->gpu_dim, op->reduction_of,
                                                            op->role)}));
    }
    // Every thread is past its last wait before the barriers are
    // invalidated (a later pipeline over the same memory initializes them
    // again), and past its last read before the tiles are reused.
    std::vector<Stmt> invals;
    for (int s = 0; s < stages; ++s)
      invals.push_back(call(Intrinsic::MbarrierInval, {barrier(s)}));
    Stmt tma = Block::make(
        {Block::make(prologue), loop, Barrier::make(), one_thread("inval", Block::make(invals)), Barrier::make()});

    Expr describable;
    for (const TmaTile &tile : p_.tiles) {
      Expr d = tma_describable(tile.input->type, tile.input->extents);
      describable = describable.defined() ? (describable && d) : d;
    }
    return Allocate::make(p_.barriers, UInt(64), MemoryType::Shared, {Expr(stages)},
                          IfThenElse::make(simplify(describable), tma, p_.fallback));
  }

private:
  const TmaPipeline &p_;
  Expr loop_var_;

  Expr barrier(const Expr &slot) const { return Load::make(UInt(64), p_.barriers, {slot}); }

  // `s` in the block's thread loops (each thread runs it), under names of
  // their own.
  Stmt all_threads(const std::string &use, Stmt s, const Expr &only_first = Expr()) const {
    if (only_first.defined())
      s = IfThenElse::make(only_first, s);
    for (auto t = p_.threads.rbegin(); t != p_.threads.rend(); ++t)
      s = For::make(thread_name(use, t->name), t->min, t->extent, ForKind::GpuThread, s, t->gpu_dim, "",
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
      COALESCE_INTERNAL_ASSERT(tile.extent.size() == 2 && tile.extent[1] % kBoxColumns == 0 && tile.extent[0] <= 256,
                               "tile of '", tile.input->name, "' cannot be copied in TMA boxes");
      int rows = static_cast<int>(tile.extent[0]);
      for (int c = 0; c < tile.extent[1] / kBoxColumns; ++c) {
        Expr column0 = c * kBoxColumns;
        std::vector<Expr> origin = {simplify(substitute(shift, tile.origin[0])),
                                    simplify(substitute(shift, tile.origin[1]) + column0)};
        // What the copy does, element by element (the host runs this).
        std::string r = str_cat(tile.buffer, ".", use, ".box", c, ".r"), e = str_cat(tile.buffer, ".", use, ".box", c, ".e");
        std::vector<Expr> coords = {Variable::make(Int(32), r), Variable::make(Int(32), e) + column0};
        Stmt element = Store::make(tile.buffer, tile.shared_indices(coords, slot), tile.value(coords, shift));
        Stmt copy = For::make(r, 0, rows, ForKind::Serial,
                              For::make(e, 0, kBoxColumns, ForKind::Serial, element, -1, "", LoopRole::StagingCopy), -1,
                              "", LoopRole::StagingCopy);
        Expr destination = Load::make(tile.input->type, tile.buffer, tile.shared_indices({Expr(0), column0}, slot));
        copies.push_back(TensorCopy::make(tile.input->name, origin, {rows, kBoxColumns}, destination, barrier(slot), copy));
        bytes += rows * kBoxColumns * tile.input->type.bytes();
      }
    }
    return Block::make({call(Intrinsic::MbarrierExpectTx, {barrier(slot), Expr(bytes)}), Block::make(copies)});
  }
};

} // namespace

Expr tma_describable(Type type, const std::vector<Expr> &extents) {
  int per_row = 16 / type.bytes();
  return extents.back() % per_row == 0;
}

Stmt tma_pipeline(const TmaPipeline &p) { return Builder(p).build(); }

} // namespace coalesce
