#include "scheduler/StageOutputTiles.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/UniformRanges.h"

#include <optional>
#include <set>
#include <vector>

namespace coalesce {

namespace {

constexpr int kVectorBytes = 16;

// The statement's one store, to the output and without guards, the
// thread loops around it and how many times its loops run it; `stageable`
// false for anything else (see the header).
class Survey : public IRVisitor {
public:
  explicit Survey(std::string output) : output_(std::move(output)) {}
  std::vector<const For *> thread_loops; ///< around the store, outermost first
  const Store *store = nullptr;
  int64_t visits = 0;
  bool stageable = true;

private:
  using IRVisitor::visit;
  const std::string output_;
  std::vector<const For *> path_;
  void visit(const For *op) override {
    path_.push_back(op);
    IRVisitor::visit(op);
    path_.pop_back();
  }
  void visit(const Store *op) override {
    if (op->buffer != output_ || store) {
      stageable = false;
      return;
    }
    store = op;
    visits = 1;
    for (const For *loop : path_) {
      visits *= *as_const_int(loop->extent);
      if (loop->for_kind == ForKind::GpuThread)
        thread_loops.push_back(loop);
    }
    IRVisitor::visit(op);
  }
  void visit(const IfThenElse *) override { stageable = false; }
};

// The statement with its store redirected into the shared tile, and the
// tile's origin and extents in the output.
class Redirect : public UniformRangesMutator {
public:
  Redirect(std::set<std::string> bound, std::string tile)
      : UniformRangesMutator(std::move(bound)), tile_(std::move(tile)) {}
  std::vector<Expr> origin;
  std::vector<int64_t> extents;
  bool ok = true;

private:
  using UniformRangesMutator::visit;
  const std::string tile_;
  Stmt visit(const Store *op, const Stmt &self) override {
    std::vector<Expr> local;
    for (const Expr &index : op->indices) {
      std::optional<UniformRange> range = ranges().of(index);
      if (!range) {
        ok = false;
        return self;
      }
      Expr first = range->uniform.defined() ? simplify(range->uniform + make_const(index.type(), range->lo))
                                            : make_const(index.type(), range->lo);
      origin.push_back(first);
      extents.push_back(range->hi - range->lo + 1);
      local.push_back(simplify(index - first));
    }
    return Store::make(tile_, local, op->value);
  }
};

class StageTiles : public IRMutator {
public:
  explicit StageTiles(const Environment &env)
      : output_(env.output().name), type_(env.output().type), domain_(env.domain) {}

  /// The shared tile around `body`.
  Stmt allocate(const Stmt &body) const {
    return Allocate::make(output_tile_name(output_), type_, MemoryType::Shared,
                          {Expr(static_cast<int>(tile_shape_->first)), Expr(static_cast<int>(tile_shape_->second))},
                          body);
  }
  /// Whether a staged statement lies outside every block loop (so that
  /// no block loop took the tile's allocation).
  bool needs_allocation() const { return tile_shape_ && !allocated_; }

private:
  using IRMutator::visit;
  const std::string output_;
  const Type type_;
  const std::vector<Expr> domain_;
  int enclosing_loops_ = 0; ///< loops around this point other than the block loops
  std::optional<std::pair<int64_t, int64_t>> tile_shape_; ///< the staged tile's rows and padded columns
  bool allocated_ = false;

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind == ForKind::GpuBlock) {
      Stmt result = IRMutator::visit(op, self);
      const auto *loop = result.as<For>();
      if (!tile_shape_ || allocated_ || !loop)
        return result;
      // The innermost block loop: one tile per block, however many copies
      // of the epilogue store through it (a persistent tile loop
      // unswitched on the TMA condition has two).
      allocated_ = true;
      return For::make(loop->name, loop->min, loop->extent, loop->for_kind, allocate(loop->body), loop->gpu_dim,
                       loop->reduction_of, loop->role);
    }
    if (op->role == LoopRole::PersistentTiles)
      return IRMutator::visit(op, self);
    if (op->for_kind != ForKind::GpuThread) {
      ++enclosing_loops_;
      Stmt result = IRMutator::visit(op, self);
      --enclosing_loops_;
      return result;
    }
    if (enclosing_loops_ > 0)
      return self;
    std::optional<Stmt> staged = stage(self);
    return staged ? *staged : self;
  }

  // partition_full_tiles's copies: every block takes the full-tile copy's
  // statements, staged, and the guarded copy is dropped (see the header).
  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    const auto *nest = op->then_case.as<For>();
    if (enclosing_loops_ > 0 || !op->else_case.defined() || !nest || nest->for_kind != ForKind::GpuThread)
      return IRMutator::visit(op, self);
    std::optional<Stmt> staged = stage(op->then_case, /*guarded_copy=*/true);
    return staged ? *staged : IRMutator::visit(op, self);
  }

  // The outermost thread loop of a statement every thread of a block runs,
  // staged. With `guarded_copy`, for every block: the copy stores only the
  // elements inside the output (see the header).
  std::optional<Stmt> stage(const Stmt &nest, bool guarded_copy = false) {
    if (!is_per_element_code(nest))
      return std::nullopt;
    Survey survey(output_);
    survey.visit_stmt(nest);
    if (!survey.stageable || !survey.store || survey.store->indices.size() != 2)
      return std::nullopt;
    std::string tile = output_tile_name(output_);
    Redirect redirect(names_bound_in(nest), tile);
    Stmt writes = redirect.mutate(nest);
    int bytes = std::max(1, type_.bytes());
    int lanes = kVectorBytes / bytes;
    if (!redirect.ok || kVectorBytes % bytes != 0)
      return std::nullopt;
    int64_t rows = redirect.extents[0], columns = redirect.extents[1];
    // Each element once: the box is the tile (see the header).
    if (rows * columns != survey.visits || columns % lanes != 0)
      return std::nullopt;

    // Every staged statement of the kernel shares one tile.
    std::pair<int64_t, int64_t> shape{rows, columns + lanes};
    if (tile_shape_ && *tile_shape_ != shape)
      return std::nullopt;
    tile_shape_ = shape;
    Expr aligned = domain_.back() % lanes == 0;
    if (!provably_multiple_of(redirect.origin[1], lanes))
      aligned = aligned && redirect.origin[1] % lanes == 0;
    aligned = simplify(aligned);
    Stmt vectors = copy_out(survey.thread_loops, redirect.origin, rows, columns, lanes, guarded_copy);
    Stmt elements = copy_out(survey.thread_loops, redirect.origin, rows, columns, 1, guarded_copy);
    if (is_const(aligned, 1) || is_const(aligned, 0))
      return Block::make({writes, Barrier::make(), is_const(aligned, 1) ? vectors : elements, Barrier::make()});
    // One statement, the condition bound around it: a kernel with producer
    // warps gives the part with barriers to the other warps as a whole
    // (split_warp_roles), which a block of four would not be.
    std::string name = tile + ".aligned";
    Stmt copy = IfThenElse::make(Variable::make(aligned.type(), name), vectors, elements);
    return LetStmt::make(name, aligned, Block::make({writes, Barrier::make(), copy, Barrier::make()}));
  }

  // The copy of the tile into the output, in runs of `lanes` elements (one
  // vector access each; 1: element by element, in a loop): the statement's
  // thread loops, each thread `per_thread` runs a thread count apart, so
  // that consecutive threads copy consecutive runs of a row.
  Stmt copy_out(const std::vector<const For *> &thread_loops, const std::vector<Expr> &origin, int64_t rows,
                int64_t columns, int lanes, bool guarded) const {
    int64_t threads = 1;
    Expr thread;
    for (const For *loop : thread_loops) {
      int64_t extent = *as_const_int(loop->extent);
      Expr index = Variable::make(Int(32), loop->name) - loop->min;
      thread = thread.defined() ? thread * static_cast<int>(extent) + index : index;
      threads *= extent;
    }
    int64_t runs_per_row = columns / lanes, runs = rows * runs_per_row;
    int64_t per_thread = (runs + threads - 1) / threads;
    std::string tile = output_tile_name(output_);
    std::string flat_name = tile + ".flat", step_name = tile + ".e";
    Expr flat = Variable::make(Int(32), flat_name);
    Expr row = flat / static_cast<int>(runs_per_row);
    Expr column = lanes == 1 ? flat % static_cast<int>(runs_per_row) : flat % static_cast<int>(runs_per_row) * lanes;
    Expr read = Load::make(type_, tile, {row, column});
    Stmt copy = Store::make(output_, {simplify(origin[0] + row), simplify(origin[1] + column)},
                            lanes == 1 ? read : Call::make_intrinsic(Intrinsic::LoadVector, type_, {read, Expr(lanes)}));
    if (guarded)
      copy = IfThenElse::make(simplify(origin[0] + row < domain_[0] && origin[1] + column < domain_[1]), copy);
    if (runs % threads != 0)
      copy = IfThenElse::make(flat < static_cast<int>(runs), copy);
    copy = LetStmt::make(flat_name, simplify(Variable::make(Int(32), step_name) * static_cast<int>(threads) + thread),
                         copy);
    // Element by element, the copy is a loop: only rows whose length is not
    // a multiple of 16 bytes take it.
    copy = For::make(step_name, 0, static_cast<int>(per_thread), lanes == 1 ? ForKind::Serial : ForKind::Unrolled, copy,
                     -1, {}, LoopRole::StagingCopy);
    for (auto loop = thread_loops.rbegin(); loop != thread_loops.rend(); ++loop)
      copy = For::make((*loop)->name, (*loop)->min, (*loop)->extent, ForKind::GpuThread, copy, (*loop)->gpu_dim, {},
                       LoopRole::StagingCopy);
    return copy;
  }
};

} // namespace

Stmt stage_output_tiles(const Stmt &s, const Environment &env) {
  if (env.output().schedule.tile_stores != TileStores::ThroughShared)
    return s;
  StageTiles stage(env);
  Stmt result = stage.mutate(s);
  // Thread loops outside any block loop (a nest the GPU path refuses later).
  return stage.needs_allocation() ? stage.allocate(result) : result;
}

} // namespace coalesce
