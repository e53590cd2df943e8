#include "scheduler/StageOutputTiles.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "dsl/Input.h"
#include "scheduler/DefinitionAtPoint.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/UniformRanges.h"

#include <algorithm>
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
// tile's origin and extents in the output. The tile is the store's last two
// indices; any before them (a batch) must be one point per statement, so
// the tile's store drops them.
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
    const size_t tile_dims = op->indices.size() - 2;
    for (size_t d = 0; d < op->indices.size(); ++d) {
      const Expr &index = op->indices[d];
      std::optional<UniformRange> range = ranges().of(index);
      if (!range || (d < tile_dims && range->hi != range->lo)) {
        ok = false;
        return self;
      }
      Expr first = range->uniform.defined() ? simplify(range->uniform + make_const(index.type(), range->lo))
                                            : make_const(index.type(), range->lo);
      origin.push_back(first);
      extents.push_back(range->hi - range->lo + 1);
      if (d >= tile_dims)
        local.push_back(simplify(index - first));
    }
    return Store::make(tile_, local, op->value);
  }
};

// A tile in shared memory: its buffer, element type, rows and padded
// columns.
struct SharedTile {
  std::string name;
  Type type;
  int64_t rows = 0, columns = 0;
  bool operator==(const SharedTile &o) const {
    return name == o.name && type == o.type && rows == o.rows && columns == o.columns;
  }
  bool operator!=(const SharedTile &o) const { return !(*this == o); }
};

// The writes of a staged statement whose store now goes to the output's
// tile: for TileStores::SumsThroughShared, that store replaced by one store
// per Func the output's definition reads, of the value the statement read
// it as, into that Func's tile. Empty where the store's value does not read
// each such Func once, at one index (nothing to stage then).
class SumsInstead : public IRMutator {
public:
  SumsInstead(std::string tile, std::vector<std::string> funcs) : tile_(std::move(tile)), funcs_(std::move(funcs)) {}
  std::vector<Type> types; ///< each Func's, as the statement read it
  bool ok = true;

private:
  using IRMutator::visit;
  const std::string tile_;
  const std::vector<std::string> funcs_;
  Stmt visit(const Store *op, const Stmt &self) override {
    if (op->buffer != tile_)
      return self;
    std::vector<Stmt> stores;
    for (const std::string &func : funcs_) {
      struct Reads : IRVisitor {
        std::string func;
        std::vector<const Load *> loads;
        using IRVisitor::visit;
        void visit(const Load *load) override {
          if (load->buffer == func)
            loads.push_back(load);
          IRVisitor::visit(load);
        }
      } reads;
      reads.func = func;
      reads.visit_expr(op->value);
      ok &= !reads.loads.empty();
      for (const Load *load : reads.loads)
        ok &= load->type == reads.loads[0]->type && load->indices.size() == reads.loads[0]->indices.size() &&
              std::equal(load->indices.begin(), load->indices.end(), reads.loads[0]->indices.begin(), equal);
      if (!ok)
        return self;
      const Load *read = reads.loads[0];
      types.push_back(read->type);
      stores.push_back(
          Store::make(output_tile_name(func), op->indices, Load::make(read->type, read->buffer, read->indices)));
    }
    return Block::make(stores);
  }
};

class StageTiles : public IRMutator {
public:
  explicit StageTiles(const Environment &env)
      : output_(env.output()), inputs_(env.inputs), stores_(env.output().schedule.tile_stores), domain_(env.domain),
        down_columns_(!env.output().output_strides.empty() &&
                      contiguous_dimension(env.output().output_strides) + 2 == env.domain.size()) {}

  /// The shared tiles around `body`.
  Stmt allocate(Stmt body) const {
    for (auto tile = tiles_->rbegin(); tile != tiles_->rend(); ++tile)
      body = Allocate::make(tile->name, tile->type, MemoryType::Shared,
                            {Expr(static_cast<int>(tile->rows)), Expr(static_cast<int>(tile->columns))}, body);
    return body;
  }
  /// Whether a staged statement lies outside every block loop (so that
  /// no block loop took the tiles' allocation).
  bool needs_allocation() const { return tiles_ && !allocated_; }

private:
  using IRMutator::visit;
  const FuncContents &output_;
  const std::map<std::string, std::shared_ptr<const InputContents>> &inputs_;
  const TileStores stores_;
  const std::vector<Expr> domain_;
  // A column-major output (output_strides({1, ldc})): the tile is copied
  // out in runs down its columns, which are contiguous in the output.
  const bool down_columns_;
  int enclosing_loops_ = 0; ///< loops around this point other than the block loops
  std::optional<std::vector<SharedTile>> tiles_; ///< what the staged statements write
  bool allocated_ = false;

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind == ForKind::GpuBlock) {
      Stmt result = IRMutator::visit(op, self);
      const auto *loop = result.as<For>();
      if (!tiles_ || allocated_ || !loop)
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
    Survey survey(output_.name);
    survey.visit_stmt(nest);
    if (!survey.stageable || !survey.store || survey.store->indices.size() < 2)
      return std::nullopt;
    std::string tile = output_tile_name(output_.name);
    Redirect redirect(names_bound_in(nest), tile);
    Stmt writes = redirect.mutate(nest);
    int bytes = std::max(1, output_.type.bytes());
    int lanes = kVectorBytes / bytes;
    if (!redirect.ok || kVectorBytes % bytes != 0)
      return std::nullopt;
    const size_t dims = redirect.extents.size();
    int64_t rows = redirect.extents[dims - 2], columns = redirect.extents[dims - 1];
    // Each element once: the box is the tile (see the header); whole
    // vectors along the output's contiguous dimension.
    if (rows * columns != survey.visits || (down_columns_ ? rows : columns) % lanes != 0)
      return std::nullopt;

    // Every staged statement of the kernel shares the tiles.
    std::vector<SharedTile> tiles;
    switch (stores_) {
    case TileStores::Direct:
      return std::nullopt;
    case TileStores::ThroughShared:
      tiles.push_back({tile, output_.type, rows, columns + lanes});
      break;
    case TileStores::SumsThroughShared: {
      std::vector<std::string> funcs = funcs_read_by_definition(output_);
      SumsInstead sums(tile, funcs);
      writes = sums.mutate(writes);
      if (funcs.empty() || !sums.ok)
        return std::nullopt;
      // Rows padded by 32 bytes: the fragments' pairs of 4-byte sums, eight
      // rows by four pairs per warp, fall in different banks per half-warp.
      for (size_t f = 0; f < funcs.size(); ++f)
        tiles.push_back({output_tile_name(funcs[f]), sums.types[f], rows,
                         columns + 2 * kVectorBytes / std::max(1, sums.types[f].bytes())});
      break;
    }
    }
    if (tiles_ && *tiles_ != tiles)
      return std::nullopt;
    tiles_ = tiles;
    // Every row holds whole vectors (so none straddles its end) and starts
    // a whole vector into the buffer: a dense output's rows are its
    // innermost extent apart, a view's its strides. (A view whose rows are
    // aligned but end ragged would write the last vector's tail between
    // the rows: the GPU check found that.) For a column-major output, its
    // columns.
    const size_t along = down_columns_ ? dims - 2 : dims - 1;
    Expr aligned = domain_[along] % lanes == 0;
    if (!output_.output_strides.empty())
      aligned = aligned && strides_are_multiples(output_.output_strides, lanes);
    if (!provably_multiple_of(redirect.origin[along], lanes))
      aligned = aligned && redirect.origin[along] % lanes == 0;
    aligned = simplify(aligned);
    Stmt vectors = copy_out(survey.thread_loops, redirect.origin, rows, columns, lanes, guarded_copy);
    Stmt elements = copy_out(survey.thread_loops, redirect.origin, rows, columns, 1, guarded_copy);
    // One statement, the condition bound around it (where it is a constant
    // too: simplify drops the copy not taken): a kernel with producer warps
    // gives the part with barriers to the other warps as a whole
    // (split_warp_roles), which a block of four would not be.
    std::string name = tile + ".aligned";
    Stmt copy = IfThenElse::make(Variable::make(aligned.type(), name), vectors, elements);
    return LetStmt::make(name, aligned, Block::make({writes, Barrier::make(), copy, Barrier::make()}));
  }

  // The output's element at (row, column) of the tile whose origin is
  // `origin` (a batch's indices first).
  static std::vector<Expr> point_of(const std::vector<Expr> &origin, const Expr &row, const Expr &column) {
    std::vector<Expr> point(origin.begin(), origin.end() - 2);
    point.push_back(simplify(origin[origin.size() - 2] + row));
    point.push_back(simplify(origin.back() + column));
    return point;
  }

  // What the copy stores at (row, column) of the tile: the tile's element,
  // or the output's definition there, each Func read from its tile.
  Expr value_at(const std::vector<Expr> &origin, const Expr &row, const Expr &column) const {
    if (stores_ != TileStores::SumsThroughShared)
      return Load::make(output_.type, output_tile_name(output_.name), {row, column});
    std::vector<Expr> point = point_of(origin, row, column);
    return definition_at_point(output_, point, [&](const std::string &func) {
      auto tile = std::find_if(tiles_->begin(), tiles_->end(),
                               [&](const SharedTile &t) { return t.name == output_tile_name(func); });
      COALESCE_INTERNAL_ASSERT(tile != tiles_->end(), "no shared tile for the sums of '", func, "'");
      return Load::make(tile->type, tile->name, {row, column});
    });
  }

  // An input read that is the same in every step of a thread's copy-out
  // (a bias along the row: its column is fixed, see copy_out), read once
  // into `name`[lane] before the steps.
  struct HoistedRead {
    Expr read; ///< the load replaced
    std::string name;
    Type type;
    Stmt fill;
  };

  // `value` with each input read that depends on neither the step's
  // `flat` nor anything but the lane and the thread's fixed values replaced
  // by a register array filled before the steps: in the epilogue's loop a
  // read of global memory right before its use leaves each step waiting
  // for it (Nsight Compute: a tenth of a bf16 kernel's time). The fill runs
  // for threads whose run lies past the output's edge too, so its
  // coordinates are clamped into the input, as clamp_input_loads clamps
  // every other read; where the run is inside, the clamp changes nothing.
  Expr hoist_step_invariant_reads(const Expr &value, const std::string &flat, const std::string &lane, int lanes,
                                  const std::string &tile, std::vector<HoistedRead> &hoisted) const {
    class Hoist : public IRMutator {
    public:
      using IRMutator::visit;
      const std::map<std::string, std::shared_ptr<const InputContents>> &inputs;
      const std::string &flat, &lane, &tile;
      int lanes;
      std::vector<HoistedRead> &hoisted;
      Hoist(const std::map<std::string, std::shared_ptr<const InputContents>> &in, const std::string &f,
            const std::string &l, const std::string &t, int n, std::vector<HoistedRead> &h)
          : inputs(in), flat(f), lane(l), tile(t), lanes(n), hoisted(h) {}
      Expr visit(const Load *op, const Expr &self) override {
        auto input = inputs.find(op->buffer);
        if (input == inputs.end() || input->second->extents.size() != op->indices.size() ||
            std::any_of(op->indices.begin(), op->indices.end(), [&](const Expr &i) { return expr_uses_var(i, flat); }))
          return IRMutator::visit(op, self);
        // One element per step (lanes == 1) has no lane loop.
        Expr at_lane = lanes == 1 ? Expr(0) : Variable::make(Int(32), lane);
        for (const HoistedRead &read : hoisted)
          if (equal(read.read, self))
            return Load::make(op->type, read.name, {at_lane});
        std::vector<Expr> clamped;
        for (size_t d = 0; d < op->indices.size(); ++d)
          clamped.push_back(simplify(max(min(op->indices[d], input->second->extents[d] - 1), 0)));
        std::string name = tile + (lanes == 1 ? ".element_read" : ".read") + std::to_string(hoisted.size());
        Stmt fill = Store::make(name, {at_lane}, Load::make(op->type, op->buffer, clamped));
        if (lanes > 1)
          fill = For::make(lane, 0, lanes, ForKind::Unrolled, fill, -1, {}, LoopRole::StagingCopy);
        hoisted.push_back({self, name, op->type, fill});
        return Load::make(op->type, name, {at_lane});
      }
    } hoist(inputs_, flat, lane, tile, lanes, hoisted);
    return hoist.mutate(value);
  }

  // The copy of the tile into the output, in runs of `lanes` elements (one
  // vector access each; 1: element by element, in a loop): the statement's
  // thread loops, each thread `per_thread` runs a thread count apart, so
  // that consecutive threads copy consecutive runs of a row (of a column,
  // for a column-major output: what is contiguous in the output). With the
  // sums staged, each run computes the epilogue into registers first, in a
  // loop that is not unrolled (its code once); a run down a column gathers
  // its elements into registers too.
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
    // Runs along a row of the tile, or down a column of it.
    int64_t runs_per_row = (down_columns_ ? rows : columns) / lanes,
            runs = (down_columns_ ? columns : rows) * runs_per_row;
    int64_t per_thread = (runs + threads - 1) / threads;
    std::string tile = output_tile_name(output_.name);
    std::string flat_name = tile + ".flat", step_name = tile + ".e", lane_name = tile + ".lane",
                vector = tile + ".vector";
    Expr flat = Variable::make(Int(32), flat_name);
    Expr row = flat / static_cast<int>(runs_per_row);
    // Where the thread count is a multiple of the runs in a row, a thread's
    // run starts at the same column in every step (flat moves by whole rows):
    // said so, the column is free of the step, and so are the loads that
    // depend on it alone (hoisted below).
    bool sums = stores_ == TileStores::SumsThroughShared;
    Expr run_in_row = sums && threads % runs_per_row == 0 ? simplify(thread % static_cast<int>(runs_per_row))
                                                          : flat % static_cast<int>(runs_per_row);
    Expr column = lanes == 1 ? run_in_row : run_in_row * lanes;
    if (down_columns_)
      std::swap(row, column);
    std::vector<Expr> at = point_of(origin, row, column);
    std::vector<HoistedRead> hoisted;
    Stmt copy;
    if (lanes == 1) {
      Expr value = value_at(origin, row, column);
      if (sums)
        value = hoist_step_invariant_reads(value, flat_name, lane_name, 1, tile, hoisted);
      copy = Store::make(output_.name, at, value);
    } else if (!sums && !down_columns_) {
      copy = Store::make(
          output_.name, at,
          Call::make_intrinsic(Intrinsic::LoadVector, output_.type, {value_at(origin, row, column), Expr(lanes)}));
    } else {
      Expr lane = Variable::make(Int(32), lane_name);
      Expr value = down_columns_ ? value_at(origin, row + lane, column) : value_at(origin, row, column + lane);
      if (sums)
        value = hoist_step_invariant_reads(value, flat_name, lane_name, lanes, tile, hoisted);
      Stmt fill = For::make(lane_name, 0, lanes, ForKind::Unrolled, Store::make(vector, {lane}, value), -1, {},
                            LoopRole::StagingCopy);
      Stmt store = Store::make(output_.name, at,
                               Call::make_intrinsic(Intrinsic::LoadVector, output_.type,
                                                    {Load::make(output_.type, vector, {Expr(0)}), Expr(lanes)}));
      copy = Allocate::make(vector, output_.type, MemoryType::Register, {Expr(lanes)}, Block::make({fill, store}));
    }
    if (guarded) {
      Expr inside = at[0] < domain_[0];
      for (size_t d = 1; d < at.size(); ++d)
        inside = inside && at[d] < domain_[d];
      copy = IfThenElse::make(simplify(inside), copy);
    }
    if (runs % threads != 0)
      copy = IfThenElse::make(flat < static_cast<int>(runs), copy);
    copy = LetStmt::make(flat_name, simplify(Variable::make(Int(32), step_name) * static_cast<int>(threads) + thread),
                         copy);
    // Element by element, the copy is a loop: only rows whose length is not
    // a multiple of 16 bytes take it. So is the epilogue's.
    copy =
        For::make(step_name, 0, static_cast<int>(per_thread), lanes == 1 || sums ? ForKind::Serial : ForKind::Unrolled,
                  copy, -1, {}, sums ? LoopRole::EpilogueSteps : LoopRole::StagingCopy);
    // The hoisted reads, once per thread before its steps (innermost first).
    for (auto read = hoisted.rbegin(); read != hoisted.rend(); ++read)
      copy =
          Allocate::make(read->name, read->type, MemoryType::Register, {Expr(lanes)}, Block::make({read->fill, copy}));
    for (auto loop = thread_loops.rbegin(); loop != thread_loops.rend(); ++loop)
      copy = For::make((*loop)->name, (*loop)->min, (*loop)->extent, ForKind::GpuThread, copy, (*loop)->gpu_dim, {},
                       LoopRole::StagingCopy);
    return copy;
  }
};

} // namespace

Stmt stage_output_tiles(const Stmt &s, const Environment &env) {
  if (env.output().schedule.tile_stores == TileStores::Direct)
    return s;
  StageTiles stage(env);
  Stmt result = stage.mutate(s);
  // Thread loops outside any block loop (a nest the GPU path refuses later).
  return stage.needs_allocation() ? stage.allocate(result) : result;
}

} // namespace coalesce
