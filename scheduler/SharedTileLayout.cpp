#include "scheduler/SharedTileLayout.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <algorithm>
#include <set>
#include <vector>

namespace coalesce {

namespace {

// The kernel's statements in top-level order: its block loops, lets,
// allocations and blocks opened; anything else (a thread loop, a barrier,
// an if, a serial loop such as a persistent block's tile loop) is one
// statement, which touches what any statement inside it touches.
void top_level(const Stmt &s, std::vector<Stmt> &out) {
  if (const auto *block = s.as<Block>()) {
    for (const Stmt &child : block->stmts)
      top_level(child, out);
  } else if (const auto *let = s.as<LetStmt>()) {
    top_level(let->body, out);
  } else if (const auto *alloc = s.as<Allocate>()) {
    top_level(alloc->body, out);
  } else if (const auto *loop = s.as<For>(); loop && loop->for_kind == ForKind::GpuBlock) {
    top_level(loop->body, out);
  } else if (s.defined()) {
    out.push_back(s);
  }
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

// The shared tiles in allocation order, and what may never be reused.
class Scan : public IRVisitor {
public:
  std::vector<Tile> tiles;
  std::set<std::string> mbarriers;
  bool blocks_share_memory = false;

private:
  using IRVisitor::visit;
  void visit(const Allocate *op) override {
    if (op->memory == MemoryType::Shared) {
      int64_t elements = 1;
      for (const Expr &extent : op->extents) {
        std::optional<int64_t> e = as_const_int(extent);
        COALESCE_INTERNAL_ASSERT(e, "shared tile '", op->name, "' has an extent that is not a constant");
        elements *= *e;
      }
      tiles.push_back(Tile{op->name, elements * std::max(1, op->type.bytes())});
    }
    IRVisitor::visit(op);
  }
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

// The buffers one statement loads from or stores to.
class Touched : public IRVisitor {
public:
  std::set<std::string> buffers;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    buffers.insert(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const Store *op) override {
    buffers.insert(op->buffer);
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
    tiles = std::move(scan.tiles);
    std::vector<Stmt> statements;
    top_level(kernel, statements);
    const int count = static_cast<int>(statements.size());
    // barrier_from_[i]: the first statement at or after i that ends in a
    // barrier of the whole block (count: none).
    barrier_from_.assign(static_cast<size_t>(count) + 1, count);
    for (int i = count - 1; i >= 0; --i)
      barrier_from_[i] = ends_in_block_barrier(statements[i]) ? i : barrier_from_[i + 1];
    for (int i = 0; i < count; ++i) {
      Touched touched;
      touched.visit_stmt(statements[i]);
      for (Tile &tile : tiles)
        if (touched.buffers.count(tile.name)) {
          if (tile.first > tile.last)
            tile.first = i;
          tile.last = i;
        }
    }
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
  for (Tile &tile : liveness.tiles) {
    const int64_t size = aligned(tile.bytes, alignment);
    layout.unshared_bytes += size;
    std::vector<int64_t> candidates = {0};
    for (const Tile *other : placed)
      candidates.push_back(other->offset + aligned(other->bytes, alignment));
    std::sort(candidates.begin(), candidates.end());
    for (int64_t offset : candidates) {
      bool fits = std::all_of(placed.begin(), placed.end(), [&](const Tile *other) {
        bool overlaps = offset < other->offset + aligned(other->bytes, alignment) && other->offset < offset + size;
        return !overlaps || liveness.apart(tile, *other);
      });
      if (fits) {
        tile.offset = offset;
        break;
      }
    }
    COALESCE_INTERNAL_ASSERT(tile.offset >= 0, "no offset for shared tile '", tile.name, "'");
    layout.offsets[tile.name] = tile.offset;
    layout.bytes = std::max(layout.bytes, tile.offset + size);
    placed.push_back(&tile);
  }
  return layout;
}

void verify_shared_tile_layout(const Stmt &kernel, const std::string &name,
                               const std::map<std::string, int64_t> &offsets) {
  TileLiveness liveness(kernel);
  const std::vector<Tile> &tiles = liveness.tiles;
  for (size_t a = 0; a < tiles.size(); ++a)
    for (size_t b = a + 1; b < tiles.size(); ++b) {
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
