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
    const auto *inner = op->body.as<For>();
    if (op->gpu_dim != 1 || !inner || inner->for_kind != ForKind::GpuBlock || inner->gpu_dim != 0 ||
        has_block_loop(inner->body))
      user_error("in schedule for '", owner_, "': gpu_persistent_blocks walks the tiles of exactly two block "
                 "loops, rows mapped to GPU block y outside columns mapped to x (gpu_blocks({row, column})), with "
                 "no block loop inside (split_k adds one); loop '", loop_short_name(op->name), "' is ",
                 for_kind_name(op->for_kind), " ", "xyz"[op->gpu_dim]);
    ++made;
    std::string block_loop = op->name + "_persistent", tile_loop = op->name + "_tile",
                linear_name = op->name + ".tile_index";
    for (const std::string &name : {block_loop, tile_loop})
      if (binds_or_reads(self, name))
        user_error("in schedule for '", owner_, "': gpu_persistent_blocks names its loops '",
                   loop_short_name(block_loop), "' and '", loop_short_name(tile_loop),
                   "', which the schedule already uses; rename that loop");
    Expr rows = op->extent, columns = inner->extent, tiles = simplify(rows * columns);
    Expr block = Variable::make(Int(32), block_loop), tile = Variable::make(Int(32), tile_loop);
    Expr linear = Variable::make(Int(32), linear_name);
    Stmt body = LetStmt::make(
        linear_name, block + tile * blocks_,
        LetStmt::make(op->name, simplify(op->min + linear / columns),
                      LetStmt::make(inner->name, simplify(inner->min + linear % columns), inner->body)));
    // Block b's tiles: b, b + P, ... below R*C.
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
