#pragma once
// Where each shared tile of a kernel starts in its block's shared memory:
// one analysis of the serial nest, which the resource check
// (CheckGpuLimits) and the kernel's layout (FuseGpuThreadLoops, then the
// code generator) both take, so that what is checked is what runs.
//
// Tiles are laid out in the order they are allocated, each at the lowest
// aligned offset where it overlaps no tile it lives beside. Two tiles do
// not live beside each other when every statement touching one comes
// before every statement touching the other in the kernel's top-level
// order, with a barrier of the whole block between them: then the later
// tile reuses the earlier one's bytes. That is the epilogue's output tile
// over the main loop's pipeline slots (drained before the barrier that
// closes the loop: each copy a pipeline issues is waited for by its
// consumers, each warpgroup MMA by wgmma_wait(0)), so that a pipeline
// keeps its four stages beside a 128 x 256 tile stored through shared
// memory.
//
// Each allocation is a tile of its own, an access belonging to the
// innermost allocation of its name around it, and each must live apart
// from every tile of another name that shares its bytes. The allocations
// of one name (an input staged by two reductions' nests, or by a loop and
// its ragged tail, one after the other) are one buffer to the code
// generator: they get the name's offset, and are used in turn by the
// staging that made them, its own barriers between (the pipelines'
// rules, VerifyPipelines.h, for the TMA's). A loop of the block's whose
// every iteration ends in a barrier of the whole block, and that issues
// no asynchronous copy or MMA, ends in it too.
//
// Never reused: mbarriers (a copy completes on one after the statements
// that issued it), and every tile of a kernel whose blocks touch each
// other's shared memory (clusters: multicast copies, remote arrivals,
// cluster barriers). A tile that lives across a loop the other one is in
// (a persistent block's tile loop, a pipeline across tiles) is beside it.

#include "dsl/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace coalesce {

struct SharedTileLayout {
  std::map<std::string, int64_t> offsets; ///< each shared tile's first byte
  int64_t bytes = 0;                      ///< the end of the highest tile, aligned
  int64_t unshared_bytes = 0;             ///< the tiles' sum, each aligned: the layout without reuse
};

/// The layout of the shared tiles (Allocates in MemoryType::Shared) of one
/// kernel of the serial nest: its outermost GPU block loop. Each tile
/// starts at a multiple of `alignment` and takes a multiple of it.
SharedTileLayout lay_out_shared_tiles(const Stmt &kernel, int64_t alignment);

/// After lowering: an internal error unless every two tiles of the lowered
/// kernel `kernel` (named `name`) whose bytes at `offsets` overlap still
/// live apart by the rule above (no later pass moved an access across the
/// barrier between them).
void verify_shared_tile_layout(const Stmt &kernel, const std::string &name,
                               const std::map<std::string, int64_t> &offsets);

} // namespace coalesce
