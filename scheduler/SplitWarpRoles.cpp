#include "scheduler/SplitWarpRoles.h"
#include "scheduler/CountBarriers.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

namespace coalesce {

namespace {

Expr thread_index(int dim) { return Call::make_intrinsic(thread_id_intrinsic(dim), Int(32), {}); }

// Where the whole block meets: barriers, and last_arrival, whose code has
// barriers of the whole block of its own (codegen/CodeGenPTX.cpp), which a
// part of the other threads alone cannot count differently. And whether
// threads leave the kernel there (thread_exit).
struct Meetings {
  bool barrier = false, last_arrival = false, exit = false;
  bool any() const { return barrier || last_arrival; }
};

Meetings meetings_in(const Stmt &s) {
  struct Find : IRVisitor {
    Meetings found;
    using IRVisitor::visit;
    // A barrier counting the other threads alone (count_barriers) is theirs,
    // not a meeting of the block.
    void visit(const Barrier *op) override { found.barrier |= op->threads == 0; }
    void visit(const Call *op) override {
      found.last_arrival |= op->intrinsic == Intrinsic::LastArrival;
      found.exit |= op->intrinsic == Intrinsic::ThreadExit;
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.found;
}

// Whether `s` holds a statement guarded by `guard`.
bool has_guard(const Stmt &s, const Expr &guard) {
  struct Find : IRVisitor {
    const Expr &guard;
    bool found = false;
    explicit Find(const Expr &g) : guard(g) {}
    using IRVisitor::visit;
    void visit(const IfThenElse *op) override {
      found |= equal(op->condition, guard);
      IRVisitor::visit(op);
    }
  } find(guard);
  find.visit_stmt(s);
  return find.found;
}

// `s` as the threads of one role run it: their own guards hold, the other
// role's do not.
class KeepRole : public IRMutator {
public:
  KeepRole(Expr mine, Expr theirs) : mine_(std::move(mine)), theirs_(std::move(theirs)) {}

private:
  using IRMutator::visit;
  Expr mine_, theirs_;
  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    if (equal(op->condition, mine_))
      return mutate(op->then_case);
    if (equal(op->condition, theirs_))
      return op->else_case.defined() ? mutate(op->else_case) : Block::make({});
    return IRMutator::visit(op, self);
  }
};

class Split : public IRMutator {
public:
  Split(int dim, int others, int other_threads)
      : producer_(on_producer_warps(dim, others)), other_(on_other_warps(dim, others)), other_threads_(other_threads) {}

  // A stretch without barriers: one program per role where both have
  // statements in it.
  Stmt stretch(const std::vector<Stmt> &stmts) const {
    Stmt s = Block::make(stmts);
    if (!has_guard(s, producer_) || !has_guard(s, other_))
      return s;
    return IfThenElse::make(producer_, KeepRole(producer_, other_).mutate(s), KeepRole(other_, producer_).mutate(s));
  }

private:
  using IRMutator::visit;
  Expr producer_, other_;
  int other_threads_;
  // Whether a statement before the one being split, in program order, has
  // the producer warps leave the kernel (thread_exit).
  bool producers_left_ = false;

  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> result, run;
    auto flush = [&] {
      if (!run.empty())
        result.push_back(stretch(run));
      run.clear();
    };
    for (const Stmt &stmt : op->stmts) {
      // Once the producer warps have left, the block is the others: every
      // later barrier is theirs, whichever pass placed it (the staged
      // output tile's, say, placed after the pipeline was built).
      const Stmt s = producers_left_ ? count_barriers(stmt, other_threads_) : stmt;
      Meetings meets = meetings_in(s);
      if (meets.barrier && !meets.last_arrival && !has_guard(s, producer_) && has_guard(s, other_)) {
        // Barriers, but no statement of the producer warps, which would
        // only meet the others at them: the others run it alone, with
        // barriers of their own (the MMA loops of the cp.async pipeline).
        flush();
        result.push_back(IfThenElse::make(
            other_, count_barriers(KeepRole(other_, producer_).mutate(s), other_threads_)));
      } else if (meets.any()) {
        // Split inside first. What comes out with no meeting of the whole
        // block left (its barriers all the other threads' own, a persistent
        // block's tile loop with a staged output tile, say) is a stretch
        // after all: each role then runs a loop of its own, with no path
        // from the producer warps' reduced registers into the others' code
        // (ptxas ignores setmaxnreg otherwise, C7507).
        Stmt inner = mutate(s);
        if (meetings_in(inner).any()) {
          flush();
          result.push_back(inner);
        } else {
          run.push_back(inner);
        }
      } else {
        run.push_back(s);
      }
      // After the statement: one that leaves and then meets does its own
      // counting, statement by statement, as it is split.
      producers_left_ |= meets.exit;
    }
    flush();
    return Block::make(result);
  }
};

} // namespace

Expr on_producer_warps(int dim, int others) { return thread_index(dim) >= others; }
Expr on_other_warps(int dim, int others) { return thread_index(dim) < others; }

namespace {

// Defence in depth: once threads may have left the kernel (thread_exit, the
// producer warps with register reallocation), a barrier of the whole block
// or last_arrival's would wait for them forever. Conservative: any such
// meeting after any exit in program order, or anywhere in a loop whose body
// exits (its next iteration comes after the exit).
void check_no_whole_block_meeting_after_exit(const Stmt &s) {
  struct Find : IRVisitor {
    bool exit = false, meeting = false;
    using IRVisitor::visit;
    void visit(const Barrier *op) override { meeting |= op->threads == 0; }
    void visit(const Call *op) override {
      exit |= op->intrinsic == Intrinsic::ThreadExit;
      meeting |= op->intrinsic == Intrinsic::LastArrival;
      IRVisitor::visit(op);
    }
  };
  struct Check : IRVisitor {
    bool exited = false;
    using IRVisitor::visit;
    void visit(const Barrier *op) override {
      if (exited && op->threads == 0)
        internal_error("a barrier of the whole block after producer warps left the kernel (thread_exit)");
    }
    void visit(const For *op) override {
      Find find;
      find.visit_stmt(op->body);
      if (find.exit && find.meeting)
        internal_error("loop '", op->name, "' has producer warps leave the kernel (thread_exit) and a barrier of the "
                       "whole block, which its next iteration would wait at for them forever");
      IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
      if (op->intrinsic == Intrinsic::ThreadExit)
        exited = true;
      if (exited && op->intrinsic == Intrinsic::LastArrival)
        internal_error("last_arrival, with barriers of the whole block, after producer warps left the kernel");
      IRVisitor::visit(op);
    }
  } check;
  check.visit_stmt(s);
}

// Defence in depth: a barrier counting the other threads alone is theirs;
// while the producer warps are in the kernel (before any thread_exit, in
// program order) they must not reach one, so it sits in the others' branch
// of a role guard (`if <others>:`, or the else of `if <producers>:`).
void check_counted_barriers_are_the_others(const Stmt &s, const Expr &producer, const Expr &other) {
  struct Check : IRVisitor {
    const Expr &producer, &other;
    bool exited = false;
    int others_only = 0; // role guards of the others around the statement visited
    Check(const Expr &p, const Expr &o) : producer(p), other(o) {}
    using IRVisitor::visit;
    void visit(const IfThenElse *op) override {
      const bool theirs = equal(op->condition, other), mine = equal(op->condition, producer);
      visit_expr(op->condition);
      others_only += theirs;
      visit_stmt(op->then_case);
      others_only -= theirs;
      if (op->else_case.defined()) {
        others_only += mine;
        visit_stmt(op->else_case);
        others_only -= mine;
      }
    }
    void visit(const Barrier *op) override {
      if (op->threads != 0 && !exited && others_only == 0)
        internal_error("a barrier of the first ", op->threads,
                       " threads where the producer warps, still in the kernel, would reach it");
    }
    void visit(const Call *op) override {
      exited |= op->intrinsic == Intrinsic::ThreadExit;
      IRVisitor::visit(op);
    }
  } check(producer, other);
  check.visit_stmt(s);
}

} // namespace

Stmt split_warp_roles(const Stmt &body, int dim, int others, int other_threads) {
  Split split(dim, others, other_threads);
  // A body that is one statement is a stretch of its own, or holds its
  // barriers deeper down.
  Stmt result = !body.as<Block>() && !meetings_in(body).any() ? split.stretch({body}) : split.mutate(body);
  check_no_whole_block_meeting_after_exit(result);
  check_counted_barriers_are_the_others(result, on_producer_warps(dim, others), on_other_warps(dim, others));
  return result;
}

} // namespace coalesce
