#include "scheduler/PadTmaInputs.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <functional>
#include <map>

namespace coalesce {

namespace {

// Threads per block of a copy, and elements per thread and step: each
// thread copies 8 elements of a row 256 apart from 8 independent loads, so
// a warp keeps 8 loads in flight instead of one, and each load and store
// of a warp is 32 consecutive elements (partial writes of a sector, as
// consecutive elements per thread would make, cost more than they save).
constexpr int kCopyThreads = 256;
constexpr int kCopyElements = 8;

// The value stored in the copy: rounded to tf32 where a tf32 MMA reads it.
Expr copied(const TmaInputCopy &copy, const Expr &value) {
  return copy.round_to_tf32 ? Call::make_intrinsic(Intrinsic::RoundToTf32, Float(32), {value}) : value;
}

// A copy with the input's rows, padded: one block per row.
Stmt row_copy_nest(const TmaInputCopy &copy) {
  const InputContents &input = *copy.input;
  const std::string padded = tma_padded_name(input.name);
  std::vector<Expr> padded_extents = tma_copy_extents(copy);
  // The copy's rows: the input's, or none where it is made only for
  // ragged rows and these are not.
  const Expr &rows = padded_extents[0], &columns = input.extents[1], &padded_columns = padded_extents[1];
  // Named "A_padded.A_row" and so on: printed as A_row, the kernel named
  // after the buffer (fuse_gpu_thread_loops).
  std::string prefix = padded + "." + input.name;
  std::string row = prefix + "_row", thread = prefix + "_thread", step = prefix + "_step", element = prefix + "_e";
  Expr column = Variable::make(Int(32), step) * (kCopyThreads * kCopyElements) +
                Variable::make(Int(32), element) * kCopyThreads + Variable::make(Int(32), thread);
  Expr r = Variable::make(Int(32), row);
  // The load's column stays inside the row (min), so that the select reads
  // a valid address past the end too; a row of no columns is never copied.
  Expr value = Load::make(input.type, input.name, {r, Min::make(column, columns - 1)});
  // All eight loads into registers first, then the stores: a store between
  // two loads would keep the second from issuing before the first returns.
  std::string piece = prefix + "_piece";
  Expr e = Variable::make(Int(32), element);
  Stmt load = Store::make(piece, {e}, copied(copy, Select::make(column < columns, value, element_zero(input.type))));
  Stmt store =
      IfThenElse::make(column < padded_columns, Store::make(padded, {r, column}, Load::make(input.type, piece, {e})));
  auto each_element = [&](const std::string &use, Stmt body) {
    return For::make(element + use, 0, kCopyElements, ForKind::Unrolled,
                     substitute({{element, Variable::make(Int(32), element + use)}}, body), -1, {},
                     LoopRole::PaddedCopy);
  };
  Stmt elements = Allocate::make(piece, input.type, MemoryType::Register, {Expr(kCopyElements)},
                                 Block::make({each_element("", load), each_element("_store", store)}));
  Stmt steps = For::make(step, 0,
                         simplify((padded_columns + (kCopyThreads * kCopyElements - 1)) /
                                  (kCopyThreads * kCopyElements)),
                         ForKind::Serial, elements, -1, {}, LoopRole::PaddedCopy);
  Stmt threads = For::make(thread, 0, kCopyThreads, ForKind::GpuThread, steps, 0, {}, LoopRole::PaddedCopy);
  return For::make(row, 0, rows, ForKind::GpuBlock, threads, 0, {}, LoopRole::PaddedCopy);
}

// Square tiles of the transposing copy, and the rows of one its threads
// cover per step (kTransposeTile x kTransposeRows threads, each copying
// kTransposeTile / kTransposeRows elements).
constexpr int kTransposeTile = 32;
constexpr int kTransposeRows = 8;

// A transposed copy (K x N into N x Kp): one block per 32 x 32 tile, read
// along the input's rows into shared memory, then written along the copy's
// rows, so that each warp's loads and stores are 32 consecutive elements.
// The shared tile has one column of padding, so that reading it by columns
// hits 32 banks.
Stmt transposed_copy_nest(const TmaInputCopy &copy) {
  const InputContents &input = *copy.input;
  const std::string padded = tma_padded_name(input.name);
  std::vector<Expr> copy_extents = tma_copy_extents(copy);          // N, Kp
  const Expr &rows = input.extents[0], &columns = input.extents[1]; // K, N
  const Expr &copy_rows = copy_extents[0], &copy_columns = copy_extents[1];
  std::string prefix = padded + "." + input.name;
  std::string tile = prefix + "_tile", shared = prefix + "_transpose";
  Expr tiles_across = simplify((copy_columns + (kTransposeTile - 1)) / kTransposeTile); // along Kp
  Expr tiles_down = simplify((copy_rows + (kTransposeTile - 1)) / kTransposeTile);      // along N
  Expr t = Variable::make(Int(32), tile);
  // The tile's first element in the copy's coordinates (n, k).
  Expr n0 = (t / tiles_across) * kTransposeTile, k0 = (t % tiles_across) * kTransposeTile;
  auto threads = [&](const std::string &use, const std::function<Stmt(const Expr &, const Expr &)> &body) {
    std::string x = prefix + "_x" + use, y = prefix + "_y" + use, e = prefix + "_e" + use;
    // Row y + 8 e and column x of the tile.
    Expr row = Variable::make(Int(32), y) + Variable::make(Int(32), e) * kTransposeRows;
    Stmt s = For::make(e, 0, kTransposeTile / kTransposeRows, ForKind::Unrolled, body(row, Variable::make(Int(32), x)),
                       -1, {}, LoopRole::PaddedCopy);
    s = For::make(x, 0, kTransposeTile, ForKind::GpuThread, s, 0, {}, LoopRole::PaddedCopy);
    return For::make(y, 0, kTransposeRows, ForKind::GpuThread, s, 1, {}, LoopRole::PaddedCopy);
  };
  // Read: the tile's row r is the input's row k0 + r (along N, consecutive
  // for consecutive x); clamped into the input so that the select reads a
  // valid address outside it too (an empty input makes no tiles).
  Stmt load = threads("", [&](const Expr &r, const Expr &x) {
    Expr k = k0 + r, n = n0 + x;
    Expr value = Load::make(input.type, input.name, {Min::make(k, rows - 1), Min::make(n, columns - 1)});
    return Store::make(shared, {r, x}, copied(copy, Select::make(k < rows && n < columns, value, element_zero(input.type))));
  });
  // Write: the copy's row n0 + r, along Kp, from the tile's column r.
  Stmt store = threads("_store", [&](const Expr &r, const Expr &x) {
    Expr n = n0 + r, k = k0 + x;
    return IfThenElse::make(n < copy_rows && k < copy_columns,
                            Store::make(padded, {n, k}, Load::make(input.type, shared, {x, r})));
  });
  Stmt body = Allocate::make(shared, input.type, MemoryType::Shared, {Expr(kTransposeTile), Expr(kTransposeTile + 1)},
                             Block::make({load, Barrier::make(), store}));
  return For::make(tile, 0, simplify(tiles_down * tiles_across), ForKind::GpuBlock, body, 0, {},
                   LoopRole::PaddedCopy);
}

Stmt copy_nest(const TmaInputCopy &copy) {
  COALESCE_INTERNAL_ASSERT(copy.input->extents.size() == 2, "a TMA copy of the ", copy.input->extents.size(),
                           "-D input '", copy.input->name, "'");
  COALESCE_INTERNAL_ASSERT(!copy.only_where_ragged || (!copy.transposed && !copy.round_to_tf32), "the copy of '",
                           copy.input->name, "' transposes or rounds, but is made only where its rows are ragged");
  return copy.transposed ? transposed_copy_nest(copy) : row_copy_nest(copy);
}

} // namespace

Stmt pad_tma_inputs(const Stmt &s, const Environment &env) {
  std::vector<Stmt> nests;
  for (const TmaInputCopy &copy : tma_input_copies(env))
    nests.push_back(copy_nest(copy));
  if (nests.empty())
    return s;
  nests.push_back(s);
  return Block::make(nests);
}

} // namespace coalesce
