#include "scheduler/PersistentBlocks.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

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
  Persistent(int blocks, std::string owner) : blocks_(blocks), owner_(std::move(owner)) {}
  int made = 0;

private:
  using IRMutator::visit;
  const int blocks_;
  const std::string owner_;

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
    Expr block = Variable::make(Int(32), block_loop), tile = Variable::make(Int(32), tile_loop);
    Expr linear = Variable::make(Int(32), linear_name);
    // Tile t of the linear (row-major) order: the innermost loop's value is
    // t % its extent, each outer one's t / (the extents inside it), % its
    // own where another lies outside.
    Stmt body = loops.back()->body;
    Expr inside; // the tiles of the loops inside the one being bound
    for (auto loop = loops.rbegin(); loop != loops.rend(); ++loop) {
      const For *l = *loop;
      Expr index = inside.defined() ? linear / inside : linear;
      if (l != loops.front())
        index = index % l->extent;
      body = LetStmt::make(l->name, simplify(l->min + index), body);
      inside = inside.defined() ? l->extent * inside : l->extent;
    }
    Expr tiles = simplify(inside);
    body = LetStmt::make(linear_name, block + tile * blocks_, body);
    // Block b's tiles: b, b + P, ... below the tiles of every loop.
    Stmt walk = For::make(tile_loop, 0, simplify((tiles - block + (blocks_ - 1)) / blocks_), ForKind::Serial, body,
                          -1, {}, LoopRole::PersistentTiles);
    return For::make(block_loop, 0, simplify(Min::make(tiles, blocks_)), ForKind::GpuBlock, walk, 0,
                     op->reduction_of);
  }
};

} // namespace

Stmt make_blocks_persistent(const Stmt &s, const Environment &env) {
  int blocks = env.output().schedule.persistent_blocks;
  if (blocks <= 0)
    return s;
  Persistent pass(blocks, env.output().name);
  Stmt result = pass.mutate(s);
  if (pass.made == 0)
    user_error("in schedule for '", env.output().name, "': gpu_persistent_blocks(", blocks,
               ") sizes the grid, but no loop of '", env.output().name,
               "' is mapped to GPU blocks; map its tile loops with gpu_blocks({row, column})");
  return result;
}

} // namespace coalesce
