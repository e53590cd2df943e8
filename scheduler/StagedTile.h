#pragma once
// Shared by stage_inputs_in_shared and lower_tma_pipelines: a staged
// input's tile (where it starts in the input, how it is laid out in shared
// memory) and the statements that copy it there, cooperatively, one thread
// per element or 16-byte vector, synchronously or with cp.async, and round
// it to tf32 in place where tf32 MMAs read it. StageInShared.cpp places
// these copies around the staging loop (double buffering, the software
// pipeline); StageWithTma.h has the TMA's.

#include "dsl/FuncContents.h"
#include "dsl/IR.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "dsl/Schedule.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace coalesce::staging {

struct LoopInfo {
  Expr min, extent;
  ForKind kind;
  int gpu_dim;
};

// The loops and lets inside the staging loop, by name. A name may name
// several loops: a loop split by a factor that does not divide it runs as
// a main loop and a tail (kio in [0, 2), then kio in [2, 3)), each reading
// the input. Such a name's range is the union of theirs, so a tile spans
// what either reads; where a union is not constant, or a let name is bound
// to different values, the name is ambiguous and staging is refused.
class ScanBody : public IRVisitor {
public:
  std::map<std::string, LoopInfo> loops;
  std::vector<std::string> thread_loops; // the first chain of thread loops, outermost first
  std::map<std::string, Expr> lets;
  std::set<std::string> ambiguous; ///< loops and lets whose name has no one range or value

private:
  using IRVisitor::visit;
  void visit(const For *op) override {
    LoopInfo info{op->min, op->extent, op->for_kind, op->gpu_dim};
    auto [seen, first] = loops.emplace(op->name, info);
    if (!first) {
      LoopInfo &known = seen->second;
      auto lo_a = as_const_int(known.min), n_a = as_const_int(known.extent), lo_b = as_const_int(op->min),
           n_b = as_const_int(op->extent);
      if (lo_a && n_a && lo_b && n_b && known.kind == op->for_kind && known.gpu_dim == op->gpu_dim) {
        int64_t lo = std::min(*lo_a, *lo_b), end = std::max(*lo_a + *n_a, *lo_b + *n_b);
        known.min = make_const(known.min.type(), lo);
        known.extent = make_const(known.extent.type(), end - lo);
      } else if (!equal(known.min, op->min) || !equal(known.extent, op->extent) || known.kind != op->for_kind) {
        ambiguous.insert(op->name);
      }
    }
    if (op->for_kind == ForKind::GpuThread && (thread_loops.empty() || in_thread_chain_))
      thread_loops.push_back(op->name);
    bool was = in_thread_chain_;
    in_thread_chain_ = op->for_kind == ForKind::GpuThread && thread_loops.back() == op->name;
    IRVisitor::visit(op);
    in_thread_chain_ = was;
  }
  void visit(const LetStmt *op) override {
    auto [seen, first] = lets.emplace(op->name, op->value);
    if (!first && !equal(seen->second, op->value))
      ambiguous.insert(op->name);
    IRVisitor::visit(op);
  }
  bool in_thread_chain_ = false;
};

// The tile's region of the input: per dimension, its first element (in
// terms of loops outside the staging loop) and its extent.
struct Region {
  std::vector<Expr> min;      // per dimension, in terms of loops outside the staging loop
  std::vector<int64_t> extent;
};

// One staged input at one loop: where its tile starts and how it is laid
// out in shared memory.
struct StagedTile {
  const InputContents *input;
  SharedLayout layout;
  TileCopies copies; // the same for every tile staged at one loop

  Region region;
  std::string buffer;
  std::vector<int> order;              // shared dimension -> input dimension
  std::vector<int64_t> shared_extents; // allocated, padding included
  int64_t elements = 1;                // of the tile itself
  // Read by warpgroup MMAs: stored in 128-byte swizzled atoms (see
  // shared_indices), the layout their matrix descriptors describe.
  bool swizzled = false;
  // The input dimension along the swizzled tile's rows: the first of the
  // input's last two (the tile as it lies in memory, [m][k] for A and [k][n]
  // for B), or the last for a B stored K-major ([n][k], the transposition
  // tf32 warpgroup MMAs need); its columns run along the other of the two.
  // Dimensions before those (a batch) span one element of the tile.
  int swizzle_row_dim = 0, swizzle_column_dim = 1;
  bool swizzled_transposed() const { return swizzled && swizzle_row_dim > swizzle_column_dim; }
  // Read by tf32 MMAs that take their operands from shared memory as they
  // are stored: every element is rounded to tf32 there, by the thread that
  // copied it, before the tile is published (see round_in_place).
  bool round_to_tf32 = false;
  // Elements per 128-byte row of a swizzled atom (64 16-bit, 32 f32) and
  // per 16-byte column in it (8 or 4).
  int swizzle_row() const { return 128 / input->type.bytes(); }
  int swizzle_column() const { return 16 / input->type.bytes(); }
};

// The cooperative copy loops: each thread handles elements e*T + t of the
// tile in row-major order of the input (so that consecutive threads read
// consecutive addresses); `make` builds the statement for one element from
// its tile coordinates (input order) and its element loop variable; with
// vector > 1, each step copies `vector` consecutive elements of the
// innermost dimension.
Stmt per_thread_copy(const StagedTile &tile, const ScanBody &scan, const std::string &prefix,
                     const std::function<Stmt(const std::vector<Expr> &, const Expr &)> &make, int vector = 1);
/// The tile's elements each thread copies (rounded up).
int64_t elements_per_thread(const StagedTile &tile, const ScanBody &scan);
/// Shared-memory indices (buffer selector `which` first when double
/// buffered) for tile coordinates given in input order.
std::vector<Expr> shared_indices(const StagedTile &tile, const std::vector<Expr> &coords, const Expr &which);
/// What the tile holds at the coordinates (the staging loop's variable
/// replaced as `shift` says): the input's element, or 0 past the input's
/// end with zero_fill.
Expr source_value(const StagedTile &tile, const std::vector<Expr> &coords, const std::map<std::string, Expr> &shift);
// The same read (coordinates in input order) from the input's copy for
// the TMA (TmaCopies::padded_copy, made as `copy` says): its
// element, 0 outside the copy's extents (past the input's own row end the
// copy itself holds 0).
Expr padded_source_value(const StagedTile &tile, const TmaInputCopy &copy, const std::vector<Expr> &coords,
                         const std::map<std::string, Expr> &shift);
/// The first tile's element as an asynchronous copy that reads only where
/// the element exists.
Expr first_tile_source(const StagedTile &tile, const std::vector<Expr> &coords,
                       const std::map<std::string, Expr> &shift);
/// Registers holding one thread's part of the next tile: [thread dims][e].
std::vector<Expr> fetch_indices(const ScanBody &scan, const std::string &prefix, const Expr &element);
/// Where zero-filled element copies test each element against the input's
/// ends: in every tile, or only in the tiles that reach them (every tile
/// tests whether it does, and one inside copies untested). FFMA kernels take
/// the second: their steady state then copies as without zero_fill. On
/// tensor cores the second copy of the copies costs registers (spills in
/// the 128-register TMA fallback), so they keep the first.
enum class ZeroFillTests { EveryTile, TilesAtInputEnds };
/// The asynchronous copy of one tile into slot `slot` of its buffer.
Stmt async_tile_copy(const StagedTile &tile, const ScanBody &scan, const std::string &prefix,
                     const std::map<std::string, Expr> &shift, const Expr &slot, ZeroFillTests tests);
/// What a thread stores into the tile for `value` (rounded to tf32 where
/// tf32 MMAs read the tile).
Expr stored_value(const StagedTile &tile, const Expr &value);
/// The in-place tf32 rounding of every tile that needs it and whose copies
/// into `slot` were asynchronous; undefined where none does.
Stmt round_landed_tiles(const std::vector<StagedTile> &tiles, const ScanBody &scan, const std::string &name,
                        const Expr &slot, bool pipelined, bool elements_only = false);
/// The proxy fence a tile that warpgroup MMAs read needs before the barrier
/// that publishes it; undefined where no tile does.
Stmt publish_fence(const std::vector<StagedTile> &tiles);

/// `s` inside the allocations of the tiles' shared buffers, `stages` slots
/// each.
Stmt allocate_tiles(const std::vector<StagedTile> &tiles, int stages, Stmt s);

/// `s` with sibling allocations of one buffer merged: a reduction loop
/// split into steady state and tail is staged twice, and its two copies
/// share one set of buffers.
Stmt merge_sibling_allocations(const Stmt &s);

} // namespace coalesce::staging
