// Where a kernel's shared tiles start (scheduler/SharedTileLayout.h): a
// tile reuses the bytes of one it never lives beside (every statement
// touching the first before every statement touching the second, a
// barrier of the whole block between), and of no other: not without the
// barrier, not across a loop or a branch that holds both, not for an
// mbarrier, not in a kernel whose blocks share shared memory (clusters).
// Then the default 128 x 256 bf16 kernel: its output tile takes the
// pipeline's bytes, so four stages fit; a persistent one keeps them apart.
// The host runs every tile in memory of its own, so only the GPU can show
// a wrong reuse: these check the rule itself, on nests built here, and the
// check after lowering (verify_shared_tile_layout) on a reuse it must refuse.

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "scheduler/Lower.h"
#include "scheduler/SharedTileLayout.h"
#include "WarpgroupGemms.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace coalesce;

namespace {

constexpr int64_t kAlignment = 1024;

// A thread's write into `tile` (what the layout looks at: who touches it).
Stmt touch(const std::string &tile) { return Store::make(tile, {Expr(0)}, FloatImm::make(Float(32), 0)); }

Stmt block_barrier() { return Barrier::make(); }

// `body` inside shared tiles of `kib` KiB each (f32 elements), a block loop
// around them: a kernel of the serial nest.
Stmt kernel(const std::vector<std::pair<std::string, int>> &tiles, Stmt body) {
  for (auto tile = tiles.rbegin(); tile != tiles.rend(); ++tile)
    body = Allocate::make(tile->first, Float(32), MemoryType::Shared, {Expr(tile->second * 256)}, body);
  return For::make("out.s0.bi", Expr(0), Expr(4), ForKind::GpuBlock, body, 0);
}

bool overlap(const SharedTileLayout &layout, const std::string &a, int a_kib, const std::string &b, int b_kib) {
  int64_t a0 = layout.offsets.at(a), b0 = layout.offsets.at(b);
  return a0 < b0 + b_kib * 1024 && b0 < a0 + a_kib * 1024;
}

} // namespace

TEST_CASE("a tile reuses the bytes of one the block is done with: a barrier of the whole block between") {
  SharedTileLayout layout =
      lay_out_shared_tiles(kernel({{"slots", 8}, {"tile", 4}}, Block::make({touch("slots"), block_barrier(),
                                                                               touch("tile")})),
                           kAlignment);
  CHECK(overlap(layout, "slots", 8, "tile", 4));
  CHECK(layout.bytes == 8 * 1024);
  CHECK(layout.unshared_bytes == 12 * 1024);
  // Either order: the earlier-allocated tile may be the later-used one.
  SharedTileLayout reversed =
      lay_out_shared_tiles(kernel({{"tile", 4}, {"slots", 8}}, Block::make({touch("slots"), block_barrier(),
                                                                               touch("tile")})),
                           kAlignment);
  CHECK(overlap(reversed, "slots", 8, "tile", 4));
  CHECK(reversed.bytes == 8 * 1024);
}

TEST_CASE("a barrier that ends both branches of an if separates; one that ends only one does not") {
  Stmt both = IfThenElse::make(Variable::make(Bool(), "c"), Block::make({touch("slots"), block_barrier()}),
                               Block::make({touch("slots"), block_barrier()}));
  SharedTileLayout layout =
      lay_out_shared_tiles(kernel({{"slots", 8}, {"tile", 4}}, Block::make({both, touch("tile")})), kAlignment);
  CHECK(overlap(layout, "slots", 8, "tile", 4));
  Stmt one = IfThenElse::make(Variable::make(Bool(), "c"), Block::make({touch("slots"), block_barrier()}),
                              touch("slots"));
  layout = lay_out_shared_tiles(kernel({{"slots", 8}, {"tile", 4}}, Block::make({one, touch("tile")})), kAlignment);
  CHECK_FALSE(overlap(layout, "slots", 8, "tile", 4));
  CHECK(layout.bytes == 12 * 1024);
}

TEST_CASE("tiles live beside each other without a barrier between, or with a partial one, or in one loop") {
  const std::vector<Stmt> bodies = {
      // No barrier: another thread may still read the slots.
      Block::make({touch("slots"), touch("tile")}),
      // Only the first 256 threads meet (producer warps do not).
      Block::make({touch("slots"), Barrier::make(256), touch("tile")}),
      // A persistent block's tile loop: the next tile's slots beside this
      // tile's output, whatever the barriers inside.
      For::make("out.s0.tile", Expr(0), Variable::make(Int(32), "tiles"), ForKind::Serial,
                Block::make({touch("slots"), block_barrier(), touch("tile"), block_barrier()})),
      // The barrier before both: nothing orders them.
      Block::make({block_barrier(), touch("slots"), touch("tile")}),
  };
  for (const Stmt &body : bodies) {
    SharedTileLayout layout = lay_out_shared_tiles(kernel({{"slots", 8}, {"tile", 4}}, body), kAlignment);
    CHECK_FALSE(overlap(layout, "slots", 8, "tile", 4));
    CHECK(layout.bytes == layout.unshared_bytes);
  }
}

TEST_CASE("mbarriers, and every tile of a kernel whose blocks share shared memory, keep their own bytes") {
  // A copy completes on an mbarrier after the statement that issued it.
  Stmt inval = Evaluate::make(Call::make_intrinsic(Intrinsic::MbarrierInval, Int(32),
                                                   {Load::make(UInt(64), "full", {Expr(0)})}));
  SharedTileLayout layout = lay_out_shared_tiles(
      kernel({{"full", 1}, {"tile", 4}}, Block::make({inval, block_barrier(), touch("tile")})), kAlignment);
  CHECK_FALSE(overlap(layout, "full", 1, "tile", 4));
  // A cluster: other blocks write this block's tiles.
  Stmt cluster = Evaluate::make(Call::make_intrinsic(Intrinsic::ClusterBarrier, Int(32), {}));
  layout = lay_out_shared_tiles(
      kernel({{"slots", 8}, {"tile", 4}}, Block::make({touch("slots"), cluster, block_barrier(), touch("tile")})),
      kAlignment);
  CHECK_FALSE(overlap(layout, "slots", 8, "tile", 4));
}

TEST_CASE("the default 128 x 256 bf16 kernel: its output tile takes the four stages' bytes; persistent, apart") {
  const MmaKind kind = MmaKind::BF16_wgmma_m64k16;
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, 132);
  REQUIRE(t.block_n == 256);
  REQUIRE(t.tile_stores == TileStores::SumsThroughShared);
  CHECK(t.stages == 4);
  GpuKernel sums = lower_for_gpu(coalesce::testing::bf16_scheduled(t).out).kernels.at(0);
  REQUIRE(sums.dynamic_shared);
  // 4 x (16 KiB of A + 32 KiB of B), the barriers' 1 KiB; the 132 KiB of
  // f32 sums over the slots.
  CHECK(sums.shared_bytes == 4 * 48 * 1024 + 1024);
  CHECK(sums.shared_offsets.at("acc_tile") + 132 * 1024 <= 4 * 48 * 1024);
  // The tile of values (66 KiB) likewise.
  t.tile_stores = TileStores::ThroughShared;
  GpuKernel k = lower_for_gpu(coalesce::testing::bf16_scheduled(t).out).kernels.at(0);
  REQUIRE(k.dynamic_shared);
  CHECK(k.shared_bytes == 4 * 48 * 1024 + 1024);
  CHECK(k.shared_offsets.at("out_tile") < k.shared_offsets.at("B_shared") + 4 * 32 * 1024);
  CHECK(k.shared_offsets.at("B_shared") < k.shared_offsets.at("out_tile") + 66 * 1024);
  // A persistent grid's tile loop holds both: three stages fit beside the
  // tile of values; the sums fit beside no two, so the values instead.
  t.tile_stores = TileStores::SumsThroughShared;
  stage_values_where_sums_do_not_fit(t); // the sums take the slots' bytes: they stay
  CHECK(t.tile_stores == TileStores::SumsThroughShared);
  t.persistent_blocks = 132;
  fit_output_tile_beside_stages(t);
  CHECK(t.tile_stores == TileStores::SumsThroughShared); // the stages only
  stage_values_where_sums_do_not_fit(t);
  CHECK(t.tile_stores == TileStores::ThroughShared);
  t.stages = 4;
  fit_output_tile_beside_stages(t);
  CHECK(t.stages == 3);
  GpuKernel persistent = lower_for_gpu(coalesce::testing::bf16_scheduled(t).out).kernels.at(0);
  int64_t tile = persistent.shared_offsets.at("out_tile"), slots = persistent.shared_offsets.at("B_shared");
  CHECK((tile >= slots + 3 * 32 * 1024 || slots >= tile + 66 * 1024));
  CHECK(persistent.shared_bytes == 3 * 48 * 1024 + 66 * 1024 + 1024);
}

TEST_CASE("after lowering, tiles that share bytes without a barrier between are an internal error") {
  Stmt unordered = kernel({{"slots", 8}, {"tile", 4}}, Block::make({touch("slots"), touch("tile")}));
  CHECK_THROWS_AS(verify_shared_tile_layout(unordered, "k", {{"slots", 0}, {"tile", 0}}), InternalError);
  CHECK_NOTHROW(verify_shared_tile_layout(unordered, "k", {{"slots", 0}, {"tile", 8 * 1024}}));
  Stmt ordered =
      kernel({{"slots", 8}, {"tile", 4}}, Block::make({touch("slots"), block_barrier(), touch("tile")}));
  CHECK_NOTHROW(verify_shared_tile_layout(ordered, "k", {{"slots", 0}, {"tile", 0}}));
}

TEST_CASE("two allocations of one name (an input staged by two nests in turn) are two tiles at the name's offset") {
  // Each access belongs to the innermost allocation of its name around it.
  // The code generator gives a name one offset, so the second allocation
  // takes the first's.
  auto twice = [](Stmt between) {
    Stmt second = Allocate::make("A_shared", Float(32), MemoryType::Shared, {Expr(8 * 256)}, touch("A_shared"));
    Stmt first = Allocate::make("A_shared", Float(32), MemoryType::Shared, {Expr(8 * 256)},
                                Block::make({touch("A_shared"), between, second}));
    return For::make("out.s0.bi", Expr(0), Expr(4), ForKind::GpuBlock, first, 0);
  };
  Stmt apart = twice(block_barrier());
  SharedTileLayout layout = lay_out_shared_tiles(apart, kAlignment);
  CHECK(layout.offsets.at("A_shared") == 0);
  CHECK(layout.bytes == 8 * 1024);
  CHECK_NOTHROW(verify_shared_tile_layout(apart, "k", layout.offsets));
  // In turn inside one statement (a reduction computed per element, each
  // staging its own tile), too: the name is one buffer, still at one
  // offset, ordered by the staging's own barriers.
  Stmt beside = twice(Barrier::make(256));
  CHECK(lay_out_shared_tiles(beside, kAlignment).offsets.at("A_shared") == 0);
  CHECK_NOTHROW(verify_shared_tile_layout(beside, "k", {{"A_shared", 0}}));
  // A tile of another name between them, live beside the second, keeps
  // its own bytes from both (before, the first alone decided the offset).
  Stmt other = twice(Block::make({block_barrier(), touch("tile")}));
  other = For::make("out.s0.bi", Expr(0), Expr(4), ForKind::GpuBlock,
                    Allocate::make("tile", Float(32), MemoryType::Shared, {Expr(4 * 256)}, other.as<For>()->body), 0);
  SharedTileLayout with_tile = lay_out_shared_tiles(other, kAlignment);
  CHECK(overlap(with_tile, "A_shared", 8, "tile", 4) == false);
}
