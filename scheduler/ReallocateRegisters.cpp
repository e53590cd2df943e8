#include "scheduler/ReallocateRegisters.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"
#include "scheduler/CountBarriers.h"
#include "scheduler/LoopNames.h"
#include "scheduler/ResourceBudget.h"

#include <algorithm>
#include <optional>

namespace coalesce {

namespace {

Stmt call(Intrinsic which, std::vector<Expr> args = {}) {
  return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
}

// A role's thread loops (a chain of For around an empty body) with `body`
// inside.
Stmt fill(const Stmt &loops, const Stmt &body) {
  const auto *op = loops.as<For>();
  if (!op)
    return body;
  return For::make(op->name, op->min, op->extent, op->for_kind, fill(op->body, body), op->gpu_dim, op->reduction_of,
                   op->role);
}

// The threads a role's loops run.
int threads_of(const Stmt &loops) {
  int threads = 1;
  for (const auto *op = loops.as<For>(); op; op = op->body.as<For>()) {
    std::optional<int64_t> extent = as_const_int(op->extent);
    COALESCE_INTERNAL_ASSERT(extent, "a role's thread loop '", op->name, "' of unknown extent");
    threads *= static_cast<int>(*extent);
  }
  return threads;
}

class Reallocate : public IRMutator {
public:
  explicit Reallocate(const Environment &env) : env_(env) {}

private:
  using IRMutator::visit;
  const Environment &env_;
  int tile_loops_ = 0; // persistent tile loops (gpu_persistent_blocks) around the statement visited

  Stmt visit(const For *op, const Stmt &self) override {
    const bool tiles = op->role == LoopRole::PersistentTiles;
    tile_loops_ += tiles;
    Stmt result = IRMutator::visit(op, self);
    tile_loops_ -= tiles;
    return result;
  }

  // After the producers leave, the barriers to the end of the block count
  // the MMA warps alone (the producers are gone).
  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    int counting = 0; // the MMA threads, once the producers have left
    for (const Stmt &s : op->stmts) {
      Stmt mutated = mutate(s);
      if (counting > 0)
        mutated = count_barriers(mutated, counting);
      if (const auto *mark = s.as<ProducerBoundary>())
        if (mark->registers > 0 && mark->point != ProducerPoint::Start)
          counting = threads_of(mark->consumers);
      changed |= !mutated.same_as(s);
      stmts.push_back(mutated);
    }
    return changed ? Block::make(stmts) : self;
  }

  Stmt visit(const ProducerBoundary *op, const Stmt &) override {
    if (op->registers == 0)
      return Stmt();
    check_reallocation(*op);
    switch (op->point) {
    case ProducerPoint::Start:
      return Block::make({fill(op->producers, call(Intrinsic::RegistersDecrease, {Expr(op->registers)})),
                          fill(op->consumers, call(Intrinsic::RegistersIncrease, {Expr(mma_registers(*op))}))});
    case ProducerPoint::Leave: return fill(op->producers, call(Intrinsic::ThreadExit));
    case ProducerPoint::Idle:
      return Block::make({fill(op->producers, Block::make({call(Intrinsic::RegistersDecrease, {Expr(op->registers)}),
                                                           call(Intrinsic::ThreadExit)})),
                          fill(op->consumers, call(Intrinsic::RegistersIncrease, {Expr(mma_registers(*op))}))});
    }
    return Stmt();
  }

  std::string refused(const ProducerBoundary &op) const {
    return str_cat("in schedule for ", op.stage, ": the TMA copies staged at '", loop_short_name(op.loop),
                   "' reallocate registers (ProducerWarps::registers), ");
  }

  // What the producers' leaving cannot work around.
  void check_reallocation(const ProducerBoundary &op) const {
    if (env_.output().schedule.split_k.requested())
      user_error(refused(op),
                 "so the producer warps leave the kernel after their copies, but split_k's last block "
                 "combines the slices behind barriers of the whole block; reallocate no registers with split_k");
    if (tile_loops_ > 0)
      user_error(refused(op),
                 "so the producer warps leave the kernel after their copies, but on this persistent grid "
                 "(gpu_persistent_blocks) the pipeline cannot run across the block's tiles (the bounds of '",
                 loop_short_name(op.loop),
                 "' depend on the tile, not only on parameters), and the block's next "
                 "tile needs them again; reallocate no registers, or a reduction whose bounds are the same "
                 "for every tile");
    if (env_.output().schedule.min_blocks_per_sm < 1)
      user_error(refused(op), "which needs the launch's registers per thread known: set gpu_min_blocks_per_sm on '",
                 env_.output().name, "'");
  }

  // What the MMA warps take: the launch's registers (ptxas allocates them
  // at entry for the block's threads and the blocks per SM asked for) less
  // what the producer warpgroup keeps.
  int mma_registers(const ProducerBoundary &op) const {
    const int producer_threads = threads_of(op.producers);
    const int block_threads = threads_of(op.consumers) + producer_threads;
    const int blocks_per_sm = env_.output().schedule.min_blocks_per_sm;
    const int launch = launch_registers(block_threads, blocks_per_sm);
    const int mma = mma_warp_registers(launch, block_threads, producer_threads, op.registers);
    auto refused = [&] {
      return str_cat("in schedule for ", op.stage, ": the TMA copies staged at '", loop_short_name(op.loop),
                     "' reallocate registers (ProducerWarps::registers = ", op.registers, "), but a launch of ",
                     block_threads, " threads, ", blocks_per_sm, " block", blocks_per_sm > 1 ? "s" : "", " per SM, ");
    };
    if (op.registers >= launch)
      user_error(refused(), "gives ", launch,
                 " per thread, so the producer warps would give none back: ask for fewer "
                 "than ",
                 launch, " producer registers");
    if (mma <= launch)
      user_error(refused(), "already gives every thread ", launch, " registers, and the MMA warps take at most ",
                 kMaxMmaWarpRegisters, " (", mma,
                 " here): reallocation gains them nothing; use producer_registers = 0, "
                 "or more blocks per SM (gpu_min_blocks_per_sm) or MMA warps, so that the launch gives fewer");
    return mma;
  }
};

} // namespace

int mma_warp_registers(int launch_registers, int block_threads, int producer_threads, int producer_registers) {
  int pool = launch_registers * block_threads - producer_registers * producer_threads;
  int per_thread = pool / (block_threads - producer_threads);
  return std::min(per_thread / 8 * 8, kMaxMmaWarpRegisters);
}

Stmt reallocate_registers(const Stmt &s, const Environment &env) { return Reallocate(env).mutate(s); }

} // namespace coalesce
