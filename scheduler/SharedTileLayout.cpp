#include "scheduler/SharedTileLayout.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace coalesce {

namespace {

// Whether `s` issues a copy or an MMA that completes after the statement
// (cp.async, the TMA, the MMAs).
bool has_asynchronous_access(const Stmt &s) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const Call *op) override {
      found |=
          op->intrinsic && (*op->intrinsic == Intrinsic::AsyncLoad || *op->intrinsic == Intrinsic::AsyncLoadVector);
      IRVisitor::visit(op);
    }
    void visit(const TensorCopy *op) override { found = true; }
    void visit(const WarpMma *op) override { found = true; }
  } find;
  find.visit_stmt(s);
  return find.found;
}

// Whether the last thing `s` does is a barrier of the whole block: all it
// touched before is then done for every thread.
bool ends_in_block_barrier(const Stmt &s) {
  if (const auto *barrier = s.as<Barrier>())
    return barrier->threads == 0;
  if (const auto *block = s.as<Block>())
    return !block->stmts.empty() && ends_in_block_barrier(block->stmts.back());
  if (const auto *branch = s.as<IfThenElse>())
    return branch->else_case.defined() && ends_in_block_barrier(branch->then_case) &&
           ends_in_block_barrier(branch->else_case);
  if (const auto *let = s.as<LetStmt>())
    return ends_in_block_barrier(let->body);
  if (const auto *alloc = s.as<Allocate>())
    return ends_in_block_barrier(alloc->body);
  // A loop of the block's (not a thread loop) whose every iteration ends in
  // one, and whose accesses are all done when their statements are: after
  // its last iteration, or touching nothing if it runs none. Not a loop
  // with asynchronous copies or MMAs, which may still be reading or
  // writing after the barrier (a pipeline drains them after its loop).
  if (const auto *loop = s.as<For>();
      loop && (loop->for_kind == ForKind::Serial || loop->for_kind == ForKind::Unrolled))
    return !has_asynchronous_access(loop->body) && ends_in_block_barrier(loop->body);
  return false;
}

struct Tile {
  std::string name;
  int64_t bytes = 0;
  // Its top-level statements: the first and the last that touch it; a
  // tile never touched lives nowhere (first > last).
  int first = 1, last = 0;
  bool pinned = false; // lives over the whole kernel
  int64_t offset = -1;
};

// What may never be reused: the mbarriers, and every tile where blocks
// touch each other's shared memory.
class Scan : public IRVisitor {
public:
  std::set<std::string> mbarriers;
  bool blocks_share_memory = false;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    if (op->intrinsic) {
      switch (*op->intrinsic) {
      case Intrinsic::MbarrierInit:
      case Intrinsic::MbarrierExpectTx:
      case Intrinsic::MbarrierWait:
      case Intrinsic::MbarrierInval:
      case Intrinsic::MbarrierArrive:
        if (const auto *bar = op->args.at(0).as<Load>())
          mbarriers.insert(bar->buffer);
        // arrive(bar, C) arrives in every block of the cluster.
        blocks_share_memory |= *op->intrinsic == Intrinsic::MbarrierArrive && op->args.size() > 1;
        break;
      case Intrinsic::ClusterBarrier:
        blocks_share_memory = true;
        break;
      default:
        break;
      }
    }
    IRVisitor::visit(op);
  }
  void visit(const TensorCopy *op) override {
    if (const auto *bar = op->barrier.as<Load>())
      mbarriers.insert(bar->buffer);
    blocks_share_memory |= op->multicast > 1;
    IRVisitor::visit(op);
  }
};

// The kernel's shared tiles, one per allocation in allocation order, and
// its statements in top-level order: its block loops, lets, allocations
// and blocks opened; anything else (a thread loop, a barrier, an if, a
// serial loop such as a persistent block's tile loop) is one statement,
// which touches what any statement inside it touches. An access belongs to
// the innermost allocation of its name around it: two allocations of one
// name (an input staged by two reductions' nests, one after the other) are
// two tiles, each with its own statements.
class Walk : public IRVisitor {
public:
  std::vector<Tile> tiles;
  std::vector<Stmt> statements;

  void top(const Stmt &s) {
    if (const auto *block = s.as<Block>()) {
      for (const Stmt &child : block->stmts)
        top(child);
    } else if (const auto *let = s.as<LetStmt>()) {
      top(let->body);
    } else if (const auto *alloc = s.as<Allocate>()) {
      open(alloc);
      top(alloc->body);
      close(alloc);
    } else if (const auto *loop = s.as<For>(); loop && loop->for_kind == ForKind::GpuBlock) {
      top(loop->body);
    } else if (s.defined()) {
      statements.push_back(s);
      visit_stmt(s);
    }
  }

private:
  using IRVisitor::visit;
  std::map<std::string, std::vector<size_t>> scopes_; ///< each name's open allocations, innermost last

  void open(const Allocate *op) {
    if (op->memory != MemoryType::Shared)
      return;
    int64_t elements = 1;
    for (const Expr &extent : op->extents) {
      std::optional<int64_t> e = as_const_int(extent);
      COALESCE_INTERNAL_ASSERT(e, "shared tile '", op->name, "' has an extent that is not a constant");
      elements *= *e;
    }
    scopes_[op->name].push_back(tiles.size());
    tiles.push_back(Tile{op->name, elements * std::max(1, op->type.bytes())});
  }
  void close(const Allocate *op) {
    if (op->memory == MemoryType::Shared)
      scopes_[op->name].pop_back();
  }
  void touch(const std::string &buffer) {
    auto scope = scopes_.find(buffer);
    if (scope == scopes_.end() || scope->second.empty())
      return;
    Tile &tile = tiles[scope->second.back()];
    const int at = static_cast<int>(statements.size()) - 1;
    if (tile.first > tile.last)
      tile.first = at;
    tile.last = at;
  }
  void visit(const Allocate *op) override {
    open(op);
    IRVisitor::visit(op);
    close(op);
  }
  void visit(const Load *op) override {
    touch(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Store *op) override {
    touch(op->buffer);
    IRVisitor::visit(op);
  }
};

int64_t aligned(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

// Which of a kernel's shared tiles live beside which: each tile's first
// and last top-level statement, and where barriers of the whole block end
// a statement.
class TileLiveness {
public:
  explicit TileLiveness(const Stmt &kernel) {
    Scan scan;
    scan.visit_stmt(kernel);
    Walk walk;
    walk.top(kernel);
    tiles = std::move(walk.tiles);
    const std::vector<Stmt> &statements = walk.statements;
    const int count = static_cast<int>(statements.size());
    // barrier_from_[i]: the first statement at or after i that ends in a
    // barrier of the whole block (count: none).
    barrier_from_.assign(static_cast<size_t>(count) + 1, count);
    for (int i = count - 1; i >= 0; --i)
      barrier_from_[i] = ends_in_block_barrier(statements[i]) ? i : barrier_from_[i + 1];
    for (Tile &tile : tiles)
      tile.pinned = scan.blocks_share_memory || scan.mbarriers.count(tile.name);
  }

  std::vector<Tile> tiles; ///< in allocation order

  /// Whether `a` and `b` may share bytes: one is done with them before the
  /// other touches them, a barrier of the whole block ending a statement
  /// between the two.
  bool apart(const Tile &a, const Tile &b) const { return done_before(a, b) || done_before(b, a); }

private:
  std::vector<int> barrier_from_;

  bool done_before(const Tile &earlier, const Tile &later) const {
    if (earlier.pinned || later.pinned)
      return false;
    if (earlier.first > earlier.last || later.first > later.last)
      return true; // one of them is touched nowhere
    return earlier.last < later.first && barrier_from_[earlier.last] < later.first;
  }
};

} // namespace

SharedTileLayout lay_out_shared_tiles(const Stmt &kernel, int64_t alignment) {
  COALESCE_INTERNAL_ASSERT(alignment > 0, "shared tiles aligned to ", alignment, " bytes");
  TileLiveness liveness(kernel);
  SharedTileLayout layout;
  std::vector<const Tile *> placed;
  // A name is one offset in the kernel (the code generator's), so the
  // allocations of one name are placed together, at the first allocation's
  // turn: at an offset where each of them fits.
  for (Tile &tile : liveness.tiles) {
    if (layout.offsets.count(tile.name))
      continue; // placed with the first allocation of its name
    std::vector<Tile *> named;
    int64_t size = 0;
    for (Tile &other : liveness.tiles)
      if (other.name == tile.name) {
        named.push_back(&other);
        size = std::max(size, aligned(other.bytes, alignment));
        layout.unshared_bytes += aligned(other.bytes, alignment);
      }
    auto fits = [&](int64_t offset) {
      return std::all_of(named.begin(), named.end(), [&](const Tile *one) {
        return std::all_of(placed.begin(), placed.end(), [&](const Tile *other) {
          bool overlaps = offset < other->offset + aligned(other->bytes, alignment) && other->offset < offset + size;
          return !overlaps || liveness.apart(*one, *other);
        });
      });
    };
    std::vector<int64_t> candidates = {0};
    for (const Tile *other : placed)
      candidates.push_back(other->offset + aligned(other->bytes, alignment));
    std::sort(candidates.begin(), candidates.end());
    int64_t offset = -1;
    for (int64_t candidate : candidates)
      if (fits(candidate)) {
        offset = candidate;
        break;
      }
    COALESCE_INTERNAL_ASSERT(offset >= 0, "no offset for shared tile '", tile.name, "'");
    for (Tile *one : named) {
      one->offset = offset;
      placed.push_back(one);
    }
    layout.offsets[tile.name] = offset;
    layout.bytes = std::max(layout.bytes, offset + size);
  }
  return layout;
}

void verify_shared_tile_layout(const Stmt &kernel, const std::string &name,
                               const std::map<std::string, int64_t> &offsets) {
  TileLiveness liveness(kernel);
  const std::vector<Tile> &tiles = liveness.tiles;
  for (size_t a = 0; a < tiles.size(); ++a)
    for (size_t b = a + 1; b < tiles.size(); ++b) {
      if (tiles[a].name == tiles[b].name)
        continue; // one buffer to the code generator (see the header)
      auto at_a = offsets.find(tiles[a].name), at_b = offsets.find(tiles[b].name);
      COALESCE_INTERNAL_ASSERT(at_a != offsets.end() && at_b != offsets.end(), "kernel '", name,
                               "': a shared tile without an offset");
      bool overlap = at_a->second < at_b->second + tiles[b].bytes && at_b->second < at_a->second + tiles[a].bytes;
      COALESCE_INTERNAL_ASSERT(!overlap || liveness.apart(tiles[a], tiles[b]), "kernel '", name,
                               "': shared tiles '", tiles[a].name, "' and '", tiles[b].name,
                               "' share bytes but live side by side in the lowered kernel (no barrier of the whole "
                               "block between the last statement touching one and the first touching the other)");
    }
}

} // namespace coalesce
