#include "scheduler/AlternateConsumerWarpgroups.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <optional>
#include <set>
#include <string>

namespace coalesce {

namespace {

// `warp` replaced by `by` everywhere except the first index of the register
// arrays in `kept` (each thread keeps its own elements).
class ReplaceWarp : public IRMutator {
public:
  ReplaceWarp(std::string warp, Expr by, const std::set<std::string> &kept)
      : warp_(std::move(warp)), by_(std::move(by)), kept_(kept) {}

private:
  using IRMutator::visit;
  std::string warp_;
  Expr by_;
  const std::set<std::string> &kept_;
  Expr visit(const Variable *op, const Expr &self) override { return op->name == warp_ ? by_ : self; }
  std::vector<Expr> indices(const std::string &buffer, const std::vector<Expr> &in) {
    std::vector<Expr> out;
    for (size_t n = 0; n < in.size(); ++n)
      out.push_back(n == 0 && kept_.count(buffer) ? in[n] : mutate(in[n]));
    return out;
  }
  Expr visit(const Load *op, const Expr &self) override {
    return Load::make(op->type, op->buffer, indices(op->buffer, op->indices));
  }
  Stmt visit(const Store *op, const Stmt &self) override {
    return Store::make(op->buffer, indices(op->buffer, op->indices), mutate(op->value));
  }
};

class Alternate : public IRMutator {
public:
  Alternate(int consumers) : w_(consumers) {}
  std::set<std::string> extended; // register arrays given 2W warps

private:
  using IRMutator::visit;
  const int w_;
  std::optional<std::string> tile_; // the persistent tile loop's variable

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->role == LoopRole::PersistentTiles) {
      tile_ = op->name;
      Stmt body = order_main_loops(mutate(op->body));
      tile_.reset();
      return For::make(op->name, op->min, op->extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
    }
    if (op->for_kind != ForKind::GpuThread || op->gpu_dim != 1)
      return IRMutator::visit(op, self);
    Expr warp = Variable::make(Int(32), op->name);
    if (op->role == LoopRole::ProducerWarps) {
      std::set<std::string> none;
      Stmt body = ReplaceWarp(op->name, warp - w_, none).mutate(op->body);
      return For::make(op->name, Expr(static_cast<int>(as_const_int(op->min).value_or(0) + w_)), op->extent,
                       op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
    }
    Stmt body = mutate(op->body);
    if (tile_) {
      body = ReplaceWarp(op->name, warp % w_, extended).mutate(body);
      Expr tile = Variable::make(Int(32), *tile_);
      body = IfThenElse::make(warp / w_ == tile % 2, body);
    }
    const int64_t extent = as_const_int(op->extent).value_or(w_);
    return For::make(op->name, op->min, Expr(static_cast<int>(2 * extent)), op->for_kind, body, op->gpu_dim,
                     op->reduction_of, op->role);
  }

  // Whether `s` holds a consumer's mbarrier wait (a full slot's).
  static bool has_consumer_wait(const Stmt &s) {
    struct Find : IRVisitor {
      bool found = false;
      int producers = 0;
      using IRVisitor::visit;
      void visit(const For *op) override {
        producers += op->role == LoopRole::ProducerWarps;
        IRVisitor::visit(op);
        producers -= op->role == LoopRole::ProducerWarps;
      }
      void visit(const Call *op) override {
        found |= producers == 0 && op->intrinsic == Intrinsic::MbarrierWait;
        IRVisitor::visit(op);
      }
    } find;
    find.visit_stmt(s);
    return find.found;
  }

  // The groups' main loops in turn: a group syncs on its barrier (2 + its
  // index) before its tile's first wait for a full slot (not the first
  // group's first tile), and arrives on the other's after its last; each
  // barrier counts both groups' threads.
  Stmt order_main_loops(const Stmt &s) const {
    if (const auto *op = s.as<LetStmt>())
      return LetStmt::make(op->name, op->value, order_main_loops(op->body));
    if (const auto *op = s.as<Allocate>())
      return Allocate::make(op->name, op->type, op->memory, op->extents, order_main_loops(op->body), op->staged_input);
    const auto *block = s.as<Block>();
    if (!block)
      return s;
    int first = -1, last = -1;
    for (size_t n = 0; n < block->stmts.size(); ++n)
      if (has_consumer_wait(block->stmts[n])) {
        first = first < 0 ? static_cast<int>(n) : first;
        last = static_cast<int>(n);
      }
    if (first < 0)
      return s;
    Expr tile = Variable::make(Int(32), *tile_);
    const int threads = 2 * w_ * 32;
    // Every lane of the group's warps: bar.sync and bar.arrive count threads.
    // `when` undefined: at every tile.
    auto barrier = [&](Intrinsic which, Expr id, Expr when) {
      const std::string warp = "group_order.warp", lane = "group_order.lane";
      Stmt body = Evaluate::make(Call::make_intrinsic(which, Int(32), {id, Expr(threads)}));
      if (when.defined())
        body = IfThenElse::make(when, body);
      body = For::make(lane, 0, 32, ForKind::GpuThread, body, 0);
      body = IfThenElse::make(Variable::make(Int(32), warp) / w_ == tile % 2, body);
      return For::make(warp, 0, 2 * w_, ForKind::GpuThread, body, 1);
    };
    std::vector<Stmt> stmts;
    for (size_t n = 0; n < block->stmts.size(); ++n) {
      if (static_cast<int>(n) == first)
        stmts.push_back(barrier(Intrinsic::GroupBarrierSync, 2 + tile % 2, tile > 0));
      stmts.push_back(block->stmts[n]);
      if (static_cast<int>(n) == last)
        stmts.push_back(barrier(Intrinsic::GroupBarrierArrive, 2 + (tile + 1) % 2, Expr()));
    }
    return Block::make(stmts);
  }

  Stmt visit(const Allocate *op, const Stmt &self) override {
    if (!tile_ || op->memory != MemoryType::Register || op->extents.empty() ||
        as_const_int(op->extents[0]) != std::optional<int64_t>(w_))
      return IRMutator::visit(op, self);
    extended.insert(op->name);
    std::vector<Expr> extents = op->extents;
    extents[0] = Expr(2 * w_);
    return Allocate::make(op->name, op->type, op->memory, extents, mutate(op->body), op->staged_input);
  }
};

// The structure ping-pong builds on: the warps of every thread loop along
// y inside the persistent tile loops (one per copy path: the TMA's, and
// cp.async where the TMA cannot describe the rows) that is not the
// producers', and whether producer warps are there.
struct FindConsumers : IRVisitor {
  std::set<int64_t> warps; // extents of the consumer thread loops along y (-1: not a constant from 0)
  bool producers = false;
  int in_tiles = 0;
  using IRVisitor::visit;
  void visit(const For *op) override {
    const bool tiles = op->role == LoopRole::PersistentTiles;
    in_tiles += tiles;
    producers |= op->role == LoopRole::ProducerWarps;
    if (in_tiles && op->for_kind == ForKind::GpuThread && op->gpu_dim == 1 && op->role != LoopRole::ProducerWarps) {
      auto e = as_const_int(op->extent);
      warps.insert(e && as_const_int(op->min) == std::optional<int64_t>(0) ? *e : -1);
    }
    IRVisitor::visit(op);
    in_tiles -= tiles;
  }
};

} // namespace

Stmt alternate_consumer_warpgroups(const Stmt &s, const Environment &env) {
  const FuncContents &output = env.output();
  if (output.schedule.consumer_schedule == ConsumerSchedule::Together)
    return s;
  const std::string where = str_cat("in schedule for '", output.name, "': gpu_consumer_schedule(",
                                    consumer_schedule_name(output.schedule.consumer_schedule), ")");
  if (output.schedule.persistent_blocks == 0)
    user_error(where, " alternates the tiles of a persistent block between two groups of MMA warps, so it needs a ",
               "persistent grid: add gpu_persistent_blocks");
  if (output.schedule.tile_stores != TileStores::Direct)
    user_error(where,
               " runs one group's epilogue beside the other's, so both would write the one staged output tile of ",
               "gpu_tile_stores(", tile_stores_name(output.schedule.tile_stores), "): use TileStores::Direct");
  if (output.schedule.split_k.requested())
    user_error(where, " alternates whole tiles; a split reduction's slices (split_k) are not whole tiles");
  FindConsumers find;
  find.visit_stmt(s);
  if (!find.producers)
    user_error(where, " lets both groups wait on one pipeline that producer warps fill: stage the inputs with TMA ",
               "copies issued by ProducerWarps");
  if (find.warps.size() != 1 || *find.warps.begin() != 4)
    user_error(where, " doubles one warpgroup of MMA warps (4 warps, a 128-row warp tile as large as the block's ",
               "tile); the block's MMA warps here are ",
               find.warps.size() == 1 && *find.warps.begin() > 0 ? str_cat(*find.warps.begin(), " warps")
                                                                 : std::string("not one constant count"));
  Alternate alternate(4);
  return alternate.mutate(s);
}

} // namespace coalesce
