#include "scheduler/StagedTile.h"

#include "dsl/IROperator.h"
#include "dsl/Input.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <memory>

namespace coalesce::staging {

// Functions the header does not name are static: this file's own steps.

// The cooperative copy loops: each thread handles elements e*T + t of the
// tile in row-major order of the input (so that consecutive threads read
// consecutive addresses); `make` builds the statement for one element from
// its tile coordinates (input order) and its element loop variable.
Stmt per_thread_copy(const StagedTile &tile, const ScanBody &scan, const std::string &prefix,
                     const std::function<Stmt(const std::vector<Expr> &, const Expr &)> &make, int vector) {
  // With vector > 1, each step copies `vector` consecutive elements of the
  // innermost dimension, so the loop runs over the tile's vectors.
  std::vector<int64_t> extents = tile.region.extent;
  extents.back() /= vector;
  int64_t units = tile.elements / vector;
  int64_t threads = 1;
  Expr thread = 0;
  for (const std::string &name : scan.thread_loops) {
    int extent = static_cast<int>(*as_const_int(scan.loops.at(name).extent));
    threads *= extent;
    thread = thread * extent + Variable::make(Int(32), prefix + name);
  }
  std::string element = prefix + "e";
  Expr element_var = Variable::make(Int(32), element);
  std::string flat_name = prefix + "flat";
  Expr flat_var = Variable::make(Int(32), flat_name);
  std::vector<Expr> coords(extents.size());
  int64_t stride = 1;
  for (size_t d = coords.size(); d-- > 0;) {
    Expr c = stride == 1 ? flat_var : flat_var / static_cast<int>(stride);
    coords[d] = d == 0 ? c : c % static_cast<int>(extents[d]);
    stride *= extents[d];
  }
  if (vector > 1)
    coords.back() = coords.back() * vector;
  Stmt copy = make(coords, element_var);
  if (units % threads != 0)
    copy = IfThenElse::make(flat_var < static_cast<int>(units), copy);
  copy = LetStmt::make(flat_name, simplify(element_var * static_cast<int>(threads) + thread), copy);
  int64_t per_thread = (units + threads - 1) / threads;
  // A tf32 tile's copies (B's element by element, transposed) and their
  // rounding stay loops: unrolled, the default tf32 warpgroup kernel held
  // every element's address across the k loop and spilled (ptxas: 328
  // bytes of stack at 128 registers); as loops it needs 196 registers.
  bool unrolled = per_thread <= 16 && !tile.round_to_tf32;
  copy = For::make(element, 0, static_cast<int>(per_thread), unrolled ? ForKind::Unrolled : ForKind::Serial, copy,
                   -1, {}, LoopRole::StagingCopy);
  for (auto name = scan.thread_loops.rbegin(); name != scan.thread_loops.rend(); ++name) {
    const LoopInfo &loop = scan.loops.at(*name);
    copy = For::make(prefix + *name, loop.min, loop.extent, ForKind::GpuThread, copy, loop.gpu_dim, {},
                     LoopRole::StagingCopy);
  }
  return copy;
}

int64_t elements_per_thread(const StagedTile &tile, const ScanBody &scan) {
  int64_t threads = 1;
  for (const std::string &name : scan.thread_loops)
    threads *= *as_const_int(scan.loops.at(name).extent);
  return (tile.elements + threads - 1) / threads;
}

// Shared-memory indices (buffer selector first when double buffered) for
// tile coordinates given in input order.
//
// A swizzled tile [R][C] (C a multiple of W, the elements of 128 bytes: 64
// 16-bit or 32 f32) is stored as [C / W][R][W]: blocks of W columns, each
// row of a block 128 bytes, and in row r the 16-byte column j at position
// j ^ (r % 8). Eight rows (1024 bytes) are one atom of the tensor cores'
// 128-byte swizzle, the layout a warpgroup MMA's descriptor names; the XOR
// also spreads the 16-byte columns of eight consecutive rows over all 32
// banks. R runs along input dimension swizzle_row_dim, C along
// swizzle_column_dim (a batch dimension before them spans one element).
std::vector<Expr> shared_indices(const StagedTile &tile, const std::vector<Expr> &coords, const Expr &which) {
  std::vector<Expr> indices;
  if (tile_buffers(tile.copies) > 1)
    indices.push_back(which);
  if (tile.swizzled) {
    const Expr &r = coords[tile.swizzle_row_dim], &c = coords[tile.swizzle_column_dim];
    int row = tile.swizzle_row(), width = tile.swizzle_column();
    Expr column = Call::make_intrinsic(Intrinsic::BitXor, Int(32), {(c % row) / width, r % 8});
    indices.push_back(c / row);
    indices.push_back(r);
    indices.push_back(column * width + c % width);
    return indices;
  }
  for (int d : tile.order)
    indices.push_back(coords[d]);
  return indices;
}

static std::vector<Expr> source_coords(const StagedTile &tile, const std::vector<Expr> &coords,
                                const std::map<std::string, Expr> &shift) {
  std::vector<Expr> source;
  for (size_t d = 0; d < coords.size(); ++d)
    source.push_back(simplify(substitute(shift, tile.region.min[d]) + coords[d]));
  return source;
}

// The input's element at the tile coordinates (clamped into the input by
// clamp_input_loads later).
static Expr source_read(const StagedTile &tile, const std::vector<Expr> &coords, const std::map<std::string, Expr> &shift) {
  auto input = std::make_shared<const InputContents>(*tile.input);
  return Call::make(input->type, input->name, source_coords(tile, coords, shift), CallType::Input, nullptr, input);
}

// Whether the tile element lies inside the input (for zero_fill).
static Expr source_in_bounds(const StagedTile &tile, const std::vector<Expr> &coords, const std::map<std::string, Expr> &shift) {
  std::vector<Expr> source = source_coords(tile, coords, shift);
  Expr inside;
  for (size_t d = 0; d < source.size(); ++d) {
    Expr within = 0 <= source[d] && source[d] < tile.input->extents[d];
    inside = inside.defined() ? (inside && within) : within;
  }
  return simplify(inside);
}

// What the tile holds at the coordinates: the input's element, or 0 past
// the input's end when the layout asks for zero_fill.
Expr source_value(const StagedTile &tile, const std::vector<Expr> &coords, const std::map<std::string, Expr> &shift) {
  Expr read = source_read(tile, coords, shift);
  if (!zero_fills(tile.copies))
    return read;
  Expr zero = element_zero(tile.input->type);
  return Select::make(source_in_bounds(tile, coords, shift), read, zero);
}

Expr padded_source_value(const StagedTile &tile, const TmaInputCopy &copy, const std::vector<Expr> &coords,
                         const std::map<std::string, Expr> &shift) {
  std::vector<Expr> source = source_coords(tile, coords, shift);
  if (copy.transposed)
    std::reverse(source.begin(), source.end()); // the copy's order
  std::vector<Expr> extents = tma_copy_extents(copy);
  Expr inside;
  std::vector<Expr> clamped;
  for (size_t d = 0; d < source.size(); ++d) {
    Expr within = 0 <= source[d] && source[d] < extents[d];
    inside = inside.defined() ? (inside && within) : within;
    // Inside the copy, so that the select reads a valid address either way
    // (a copy without elements is never read: no tile step runs).
    clamped.push_back(simplify(Max::make(Min::make(source[d], extents[d] - 1), 0)));
  }
  Expr read = Load::make(tile.input->type, tma_padded_name(tile.input->name), clamped);
  Expr zero = element_zero(tile.input->type);
  return Select::make(simplify(inside), read, zero);
}

// Elements per 16-byte vector copy of a zero-filled tile, or 1 when its
// layout cannot take them: the innermost dimension must stay innermost in
// shared memory, and both its extent and the padded row must hold whole
// 16-byte vectors, so every vector starts 16-byte aligned in shared memory.
static int vector_width(const StagedTile &tile) {
  int bytes = tile.input->type.bytes();
  if (!zero_fills(tile.copies) || tile.layout.transposed || tile.swizzled_transposed() || 16 % bytes != 0)
    return 1;
  int vector = 16 / bytes;
  if (tile.region.extent.back() % vector || tile.shared_extents.back() % vector)
    return 1;
  // Each vector starts a whole vector into the input's rows only where the
  // tile does: a reduction over [3, K + 3) starts its tiles at column 3,
  // which the row test (K + 3 a multiple of 8) says nothing about.
  if (!provably_multiple_of(simplify(tile.region.min.back()), vector))
    return 1;
  return vector;
}

// Whether the 16-byte copies may run: every row of the input starts a whole
// vector into its buffer and holds whole vectors (async_vector_source keeps
// each copy's start inside the row, at most extent - vector, which is the
// true start only where the extent is a multiple). For a dense input the
// first follows from the second; a view's rows may start aligned and
// still end ragged (K = 37 in rows 48 apart).
static Expr rows_of_whole_vectors(const InputContents &input, int vector) {
  Expr starts = rows_start_at_multiples(input, vector);
  return input.strides.empty() ? starts : (starts && input.extents.back() % vector == 0);
}

// A 16-byte asynchronous copy of the `vector` elements starting at the tile
// coordinates: async_load_vector(read, count) copies the first `count`
// (those inside the input) and zero-fills the rest. The start is kept a
// whole vector inside the input's rows (min with extent - vector), so that
// even a copy of nothing reads an aligned, valid address; the caller runs it
// only where the input's rows are whole vectors (extent % vector == 0).
static Expr async_vector_source(const StagedTile &tile, const std::vector<Expr> &coords,
                         const std::map<std::string, Expr> &shift, int vector) {
  std::vector<Expr> source = source_coords(tile, coords, shift);
  size_t last = source.size() - 1;
  Expr inner_extent = tile.input->extents[last];
  Expr remaining = inner_extent - source[last];
  Expr count = Max::make(Min::make(remaining, vector), 0);
  for (size_t d = 0; d < last; ++d)
    count = Select::make(0 <= source[d] && source[d] < tile.input->extents[d], count, 0);
  source[last] = Max::make(Min::make(source[last], inner_extent - vector), 0);
  auto input = std::make_shared<const InputContents>(*tile.input);
  Expr read = Call::make(input->type, input->name, source, CallType::Input, nullptr, input);
  return Call::make_intrinsic(Intrinsic::AsyncLoadVector, tile.input->type, {read, simplify(count), Expr(vector)});
}

// The first tile's element as an asynchronous copy that reads only where
// the element exists: inside the input with zero_fill, else wherever the
// input has elements (the read is clamped into it); elsewhere it writes 0.
Expr first_tile_source(const StagedTile &tile, const std::vector<Expr> &coords,
                       const std::map<std::string, Expr> &shift) {
  Expr readable = zero_fills(tile.copies) ? source_in_bounds(tile, coords, shift) : Expr();
  if (!readable.defined()) {
    for (const Expr &extent : tile.input->extents)
      if (!as_const_int(extent))
        readable = readable.defined() ? (readable && 0 < extent) : (0 < extent);
  }
  std::vector<Expr> args = {source_read(tile, coords, shift)};
  if (readable.defined())
    args.push_back(simplify(readable));
  return Call::make_intrinsic(Intrinsic::AsyncLoad, tile.input->type, args);
}

// An asynchronous copy of the element (async_load(read[, in_bounds]): with
// zero_fill, an element outside the input is written as 0 without reading,
// where `tested`; a tile wholly inside the input needs no test).
static Expr async_source(const StagedTile &tile, const std::vector<Expr> &coords,
                         const std::map<std::string, Expr> &shift, bool tested) {
  std::vector<Expr> args = {source_read(tile, coords, shift)};
  if (tested)
    args.push_back(source_in_bounds(tile, coords, shift));
  return Call::make_intrinsic(Intrinsic::AsyncLoad, tile.input->type, args);
}

// Whether the whole tile (the staging loop's variable replaced as `shift`
// says) lies inside the input: true for every tile but those at its ends
// (the last k step of a ragged K, the last block row or column).
static Expr tile_inside_input(const StagedTile &tile, const std::map<std::string, Expr> &shift) {
  Expr inside;
  for (size_t d = 0; d < tile.region.min.size(); ++d) {
    Expr min = simplify(substitute(shift, tile.region.min[d]));
    Expr within = 0 <= min && min + static_cast<int>(tile.region.extent[d]) <= tile.input->extents[d];
    inside = inside.defined() ? (inside && within) : within;
  }
  return simplify(inside);
}

// Registers holding one thread's part of the next tile: [thread dims][e].
std::vector<Expr> fetch_indices(const ScanBody &scan, const std::string &prefix, const Expr &element) {
  std::vector<Expr> indices;
  for (const std::string &name : scan.thread_loops)
    indices.push_back(Variable::make(Int(32), prefix + name));
  indices.push_back(element);
  return indices;
}

// The asynchronous copy of one tile (the staging loop's variable shifted by
// `shift`) into slot `slot` of its buffer: 16-byte copies where the input's
// rows are whole vectors (the check is uniform: one branch for the whole
// block), else one element at a time. (Measured on the H200 at bf16
// 4093x4091x4097: reading a thread's 2-byte elements into registers 8 or 16
// at a time before storing them took 8.3 ms against 4.3 ms for this.)
Stmt async_tile_copy(const StagedTile &tile, const ScanBody &scan, const std::string &prefix,
                     const std::map<std::string, Expr> &shift, const Expr &slot, ZeroFillTests tests) {
  auto elements = [&](bool tested) {
    return per_thread_copy(tile, scan, prefix, [&](const std::vector<Expr> &c, const Expr &) {
      return Store::make(tile.buffer, shared_indices(tile, c, slot), async_source(tile, c, shift, tested));
    });
  };
  // A tile inside the input (every k step but a ragged K's last, every
  // block but the last row and column) copies without the tests. (The
  // FFMA default at 4093 x 4091 x 4097 on an H100: 10% slower with the
  // tests in every step.)
  const bool zero_fill = zero_fills(tile.copies);
  Expr inside = zero_fill && tests == ZeroFillTests::TilesAtInputEnds ? tile_inside_input(tile, shift) : Expr(0);
  Stmt scalar = elements(zero_fill && !is_const(inside, 1));
  if (!is_const(inside, 0) && !is_const(inside, 1))
    scalar = IfThenElse::make(inside, elements(false), scalar);
  int vector = vector_width(tile);
  if (vector == 1)
    return scalar;
  Stmt vectors = per_thread_copy(
      tile, scan, prefix,
      [&](const std::vector<Expr> &c, const Expr &) {
        return Store::make(tile.buffer, shared_indices(tile, c, slot), async_vector_source(tile, c, shift, vector));
      },
      vector);
  return IfThenElse::make(rows_of_whole_vectors(*tile.input, vector), vectors, scalar);
}

// What a thread stores into the tile for `value`: rounded to tf32 for a
// tile read by tf32 MMAs from shared memory.
Expr stored_value(const StagedTile &tile, const Expr &value) {
  return tile.round_to_tf32 ? Call::make_intrinsic(Intrinsic::RoundToTf32, Float(32), {value}) : value;
}

// A tf32 warpgroup MMA reads its f32 operands from shared memory as they
// are stored, and the instruction does not round them (it reads only the
// tf32 bits), so the tile must hold tf32 values, rounded as the host rounds
// them. An asynchronous copy cannot round: after this thread's copies into
// `slot` have landed (its wait), it rounds the elements it copied, in
// place, before the fence and barrier that publish the tile. The element
// mapping is async_tile_copy's (16-byte vectors where the input's rows are
// whole vectors, else elements), or with `elements_only` the per-element one
// of the first tile's copy.
static Stmt round_in_place(const StagedTile &tile, const ScanBody &scan, const std::string &prefix, const Expr &slot,
                    bool elements_only) {
  auto rounded = [&](int vector) {
    return per_thread_copy(
        tile, scan, prefix,
        [&](const std::vector<Expr> &c, const Expr &) {
          std::vector<Stmt> stores;
          for (int v = 0; v < vector; ++v) {
            std::vector<Expr> at = c;
            at.back() = simplify(at.back() + v);
            std::vector<Expr> indices = shared_indices(tile, at, slot);
            stores.push_back(Store::make(tile.buffer, indices,
                                         stored_value(tile, Load::make(Float(32), tile.buffer, indices))));
          }
          return Block::make(stores);
        },
        vector);
  };
  int vector = elements_only ? 1 : vector_width(tile);
  if (vector == 1)
    return rounded(1);
  return IfThenElse::make(rows_of_whole_vectors(*tile.input, vector), rounded(vector), rounded(1));
}

// round_in_place for every tile that needs it and whose copies into `slot`
// were asynchronous (every tile in a pipeline, else those staged with
// async_copy; the others round as they store). None: an undefined Stmt.
Stmt round_landed_tiles(const std::vector<StagedTile> &tiles, const ScanBody &scan, const std::string &name,
                        const Expr &slot, bool pipelined, bool elements_only) {
  std::vector<Stmt> rounds;
  for (const StagedTile &tile : tiles)
    if (tile.round_to_tf32 && (pipelined || (tile_buffers(tile.copies) > 1 && !std::holds_alternative<RegisterDoubleBuffer>(tile.copies))))
      rounds.push_back(round_in_place(tile, scan, tile.buffer + "." + name + ".", slot, elements_only));
  return rounds.empty() ? Stmt() : Block::make(rounds);
}

// Before the barrier that publishes a tile: a tile that warpgroup MMAs read
// was written through the ordinary (generic) proxy, by copies or stores,
// and the tensor cores read through the async proxy, which sees those
// writes only after a proxy fence by each writing thread.
Stmt publish_fence(const std::vector<StagedTile> &tiles) {
  bool any = std::any_of(tiles.begin(), tiles.end(), [](const StagedTile &t) { return t.swizzled; });
  return any ? Evaluate::make(Call::make_intrinsic(Intrinsic::FenceProxyAsync, Int(32), {})) : Stmt();
}

Stmt allocate_tiles(const std::vector<StagedTile> &tiles, int stages, Stmt s) {
  for (const StagedTile &tile : tiles) {
    std::vector<Expr> extents = {Expr(stages)};
    for (int64_t e : tile.shared_extents)
      extents.push_back(static_cast<int>(e));
    s = Allocate::make(tile.buffer, tile.input->type, MemoryType::Shared, extents, s, tile.input->name);
  }
  return s;
}

namespace {

// A reduction loop split into steady state and tail is staged twice; its
// two copies share one set of buffers.
class MergeSiblingAllocations : public IRMutator {
  using IRMutator::visit;
  static bool same(const Allocate *a, const Allocate *b) {
    if (a->name != b->name || a->type != b->type || a->memory != b->memory || a->extents.size() != b->extents.size())
      return false;
    for (size_t d = 0; d < a->extents.size(); ++d)
      if (!equal(a->extents[d], b->extents[d]))
        return false;
    return true;
  }
  Stmt visit(const Block *op, const Stmt &self) override {
    std::vector<Stmt> merged;
    for (const Stmt &s : op->stmts) {
      const Allocate *previous = merged.empty() ? nullptr : merged.back().as<Allocate>();
      const Allocate *current = s.as<Allocate>();
      if (previous && current && same(previous, current)) {
        merged.back() = Allocate::make(previous->name, previous->type, previous->memory, previous->extents,
                                       Block::make({previous->body, current->body}), previous->staged_input);
        continue;
      }
      merged.push_back(s);
    }
    std::vector<Stmt> result;
    for (const Stmt &s : merged)
      result.push_back(mutate(s));
    return Block::make(result);
  }
};

} // namespace

Stmt merge_sibling_allocations(const Stmt &s) { return MergeSiblingAllocations().mutate(s); }

} // namespace coalesce::staging
