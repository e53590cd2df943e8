#include "scheduler/GroupGpuBlocks.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

namespace coalesce {

namespace {

class GroupBlocks : public IRMutator {
public:
  GroupBlocks(int rows, std::string owner) : rows_(rows), owner_(std::move(owner)) {}
  int grouped = 0;

private:
  using IRMutator::visit;
  const int rows_;
  const std::string owner_;

  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind != ForKind::GpuBlock)
      return IRMutator::visit(op, self);
    // The output's block loops: rows (y) outside columns (x), nothing
    // between them.
    const auto *inner = op->body.as<For>();
    const auto *third = inner ? inner->body.as<For>() : nullptr;
    if (op->gpu_dim != 1 || !inner || inner->for_kind != ForKind::GpuBlock || inner->gpu_dim != 0 ||
        (third && third->for_kind == ForKind::GpuBlock))
      user_error("in schedule for '", owner_, "': gpu_block_groups needs exactly two block loops, rows mapped to "
                 "GPU block y outside columns mapped to x (gpu_blocks({row, column})); loop '",
                 loop_short_name(op->name), "' is ", for_kind_name(op->for_kind), " ", "xyz"[op->gpu_dim],
                 inner && inner->for_kind == ForKind::GpuBlock
                     ? str_cat(" around '", loop_short_name(inner->name), "' (", "xyz"[inner->gpu_dim], ")")
                     : std::string(" with no block loop directly inside"),
                 // The third loop by name: with only "'bi' is y around 'bj' (x)"
                 // the message described a legal pair and never said what was wrong.
                 third && third->for_kind == ForKind::GpuBlock
                     ? str_cat(", which is around block loop '", loop_short_name(third->name), "' (", "xyz"[third->gpu_dim],
                               "), a third block loop (split_k adds one for its slices)")
                     : std::string());
    ++grouped;
    // The grouped loops print as bi_grouped and bj_grouped; a name the
    // nest already binds is not taken twice.
    std::string row_loop = op->name + "_grouped", column_loop = inner->name + "_grouped";
    for (const std::string &name : {row_loop, column_loop})
      if (binds_or_reads(self, name))
        user_error("in schedule for '", owner_, "': gpu_block_groups names its block loops '",
                   loop_short_name(name), "', which the schedule already uses; rename that loop");
    Expr row = Variable::make(Int(32), row_loop), column = Variable::make(Int(32), column_loop);
    Expr columns = inner->extent, all_rows = op->extent;
    std::string linear_name = op->name + ".linear", group_rows_name = op->name + ".group_rows";
    Expr linear = Variable::make(Int(32), linear_name);
    Expr per_group = columns * rows_;
    Expr first_row = (linear / per_group) * rows_;
    // The last group may hold fewer rows.
    Expr group_rows = Variable::make(Int(32), group_rows_name);
    Expr in_group = linear % per_group;
    Stmt body = LetStmt::make(
        linear_name, row * columns + column,
        LetStmt::make(group_rows_name, Min::make(all_rows - first_row, rows_),
                      LetStmt::make(op->name, simplify(op->min + first_row + in_group % group_rows),
                                    LetStmt::make(inner->name, simplify(inner->min + in_group / group_rows),
                                                  inner->body))));
    Stmt columns_loop = For::make(column_loop, 0, columns, ForKind::GpuBlock, body, 0, inner->reduction_of);
    return For::make(row_loop, 0, all_rows, ForKind::GpuBlock, columns_loop, 1, op->reduction_of);
  }
};

} // namespace

Stmt group_gpu_blocks(const Stmt &s, const Environment &env) {
  int rows = env.output().schedule.block_group_rows;
  if (rows <= 0)
    return s;
  GroupBlocks pass(rows, env.output().name);
  Stmt result = pass.mutate(s);
  if (pass.grouped == 0)
    user_error("in schedule for '", env.output().name, "': gpu_block_groups(", rows,
               ") orders GPU blocks, but no loop of '", env.output().name,
               "' is mapped to GPU blocks; map its tile loops with gpu_blocks({row, column})");
  return result;
}

} // namespace coalesce
