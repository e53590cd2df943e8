#include "scheduler/PersistentBlocks.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

#include <algorithm>

namespace coalesce {

namespace {

bool has_block_loop(const Stmt &s) {
  struct Find : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const For *op) override {
      found |= op->for_kind == ForKind::GpuBlock;
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.found;
}

class Persistent : public IRMutator {
public:
  Persistent(int blocks, std::string owner, std::string cluster_loop, int cluster_blocks)
      : blocks_(blocks), owner_(std::move(owner)), cluster_loop_(std::move(cluster_loop)),
        cluster_(std::max(1, cluster_blocks)) {}
  int made = 0;

private:
  using IRMutator::visit;
  const int blocks_;
  const std::string owner_;
  // gpu_cluster: the walked loop whose blocks form clusters (empty if
  // none) and the blocks of a cluster (1 without).
  const std::string cluster_loop_;
  const int cluster_;

  // A clustered loop's extent in clusters: build_loop_nest rounded it up
  // to ceil(n / C) * C.
  Expr whole_clusters(const Expr &extent) const {
    if (const auto *mul = extent.as<Mul>())
      if (auto c = as_const_int(mul->b); c && *c == cluster_)
        return mul->a;
    return simplify(extent / cluster_);
  }

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind != ForKind::GpuBlock)
      return IRMutator::visit(op, self);
    // The chain of block loops from the outermost: two (rows y, columns x)
    // or three (a batch z around them), each directly inside the last.
    std::vector<const For *> loops = {op};
    while (loops.size() < 3)
      if (const auto *inner = loops.back()->body.as<For>(); inner && inner->for_kind == ForKind::GpuBlock)
        loops.push_back(inner);
      else
        break;
    bool ordered = loops.size() >= 2;
    for (size_t l = 0; l < loops.size(); ++l)
      ordered &= loops[l]->gpu_dim == static_cast<int>(loops.size() - 1 - l);
    if (!ordered || has_block_loop(loops.back()->body))
      user_error("in schedule for '", owner_,
                 "': gpu_persistent_blocks walks the tiles of two or three block "
                 "loops, rows mapped to GPU block y outside columns mapped to x (gpu_blocks({row, column})), or a "
                 "batch mapped to z outside both (gpu_blocks({batch, row, column})), with no block loop inside "
                 "(split_k adds one); loop '",
                 loop_short_name(op->name), "' is ", for_kind_name(op->for_kind), " ", "xyz"[op->gpu_dim]);
    ++made;
    std::string block_loop = op->name + "_persistent", tile_loop = op->name + "_tile",
                linear_name = op->name + ".tile_index";
    for (const std::string &name : {block_loop, tile_loop})
      if (binds_or_reads(self, name))
        user_error("in schedule for '", owner_, "': gpu_persistent_blocks names its loops '",
                   loop_short_name(block_loop), "' and '", loop_short_name(tile_loop),
                   "', which the schedule already uses; rename that loop");
    // check_clusters kept the clustered loop a split's outer block loop of
    // the output: one of these.
    COALESCE_INTERNAL_ASSERT(cluster_ == 1 || std::any_of(loops.begin(), loops.end(),
                                                          [&](const For *l) { return l->name == cluster_loop_; }),
                             "a persistent grid clustered along '", cluster_loop_, "', which it does not walk");
    Expr block = Variable::make(Int(32), block_loop), tile = Variable::make(Int(32), tile_loop);
    Expr linear = Variable::make(Int(32), linear_name);
    // In clusters of C blocks along one of the loops, the tiles are walked
    // by whole clusters: block b is rank b % C of cluster b / C, the linear
    // order counts that loop in steps of C (its extent is whole clusters,
    // build_loop_nest rounded it up), and each cluster's blocks take the
    // loop's C consecutive values of one step, the other loops' values
    // alike. So the blocks of a cluster walk the same number of tiles, in
    // step, and differ only along the clustered loop: a tile that does not
    // depend on it (a multicast one) is the same for all of them.
    const int clusters = blocks_ / cluster_; // check_clusters: blocks_ is whole clusters
    Expr cluster = simplify(block / cluster_), rank = block % cluster_;
    // Tile t of the linear (row-major) order: the innermost loop's value is
    // t % its extent, each outer one's t / (the extents inside it), % its
    // own where another lies outside.
    Stmt body = loops.back()->body;
    Expr inside; // the tiles of the loops inside the one being bound
    for (auto loop = loops.rbegin(); loop != loops.rend(); ++loop) {
      const For *l = *loop;
      const bool clustered = cluster_ > 1 && l->name == cluster_loop_;
      Expr extent = clustered ? whole_clusters(l->extent) : l->extent;
      Expr index = inside.defined() ? linear / inside : linear;
      if (l != loops.front())
        index = index % extent;
      if (clustered)
        index = index * cluster_ + rank;
      body = LetStmt::make(l->name, simplify(l->min + index), body);
      inside = inside.defined() ? extent * inside : extent;
    }
    Expr tiles = simplify(inside); // of whole clusters
    body = LetStmt::make(linear_name, cluster + tile * clusters, body);
    // Cluster c's tiles: c, c + P/C, ... below the tiles of every loop.
    Stmt walk = For::make(tile_loop, 0, simplify((tiles - cluster + (clusters - 1)) / clusters), ForKind::Serial, body,
                          -1, {}, LoopRole::PersistentTiles);
    return For::make(block_loop, 0, simplify(Min::make(tiles, clusters) * cluster_), ForKind::GpuBlock, walk, 0,
                     op->reduction_of);
  }
};

} // namespace

Stmt make_blocks_persistent(const Stmt &s, const Environment &env) {
  int blocks = env.output().schedule.persistent_blocks;
  if (blocks <= 0)
    return s;
  Persistent pass(blocks, env.output().name, cluster_loop_name(env.output()), env.output().schedule.cluster_blocks);
  Stmt result = pass.mutate(s);
  if (pass.made == 0)
    user_error("in schedule for '", env.output().name, "': gpu_persistent_blocks(", blocks,
               ") sizes the grid, but no loop of '", env.output().name,
               "' is mapped to GPU blocks; map its tile loops with gpu_blocks({row, column})");
  return result;
}

} // namespace coalesce
