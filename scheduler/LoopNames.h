#pragma once
// How lowering names loops: a stage's loop variable `ko` of Func `acc`'s
// update 0 is "acc.s1.ko" until strip_stage_prefixes, so that nests of
// different Funcs never capture each other's names. The passes that build,
// find and report loops share these few rules.

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Environment.h"
#include "scheduler/Substitute.h"

#include <map>
#include <string>

namespace coalesce {

/// "acc.s1." : the prefix of every loop variable of stage `stage` of `func`.
inline std::string stage_prefix(const std::string &func, size_t stage) { return str_cat(func, ".s", stage, "."); }

/// Whether `s` binds (a loop or let) or reads a variable called `name`: a
/// pass that adds a loop or let of that name must not capture it.
inline bool binds_or_reads(const Stmt &s, const std::string &name) {
  class Find : public IRVisitor {
  public:
    explicit Find(const std::string &n) : name_(n) {}
    bool found = false;

  private:
    using IRVisitor::visit;
    const std::string &name_;
    void visit(const For *op) override {
      found |= op->name == name_;
      IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
      found |= op->name == name_;
      IRVisitor::visit(op);
    }
    void visit(const Variable *op) override { found |= op->name == name_; }
  } find(name);
  find.visit_stmt(s);
  return find.found;
}

/// "ko" for "acc.s1.ko" (and for copies' names like "A_shared.acc.s1.ko").
inline std::string loop_short_name(const std::string &qualified) {
  return qualified.substr(qualified.rfind('.') + 1);
}

/// `e` as a message shows it: each qualified loop variable ("acc.s1.ko")
/// by its short name ("ko*64 + 2").
inline std::string with_short_loop_names(const Expr &e) {
  std::map<std::string, Expr> short_names;
  for (const Variable *var : variables_of(e))
    if (var->name.find('.') != std::string::npos)
      short_names[var->name] = Variable::make(var->type, loop_short_name(var->name));
  return to_string(substitute(short_names, e));
}

/// "acc" for "acc.s1.ko": the Func whose loop it is.
inline std::string loop_owner(const std::string &qualified) { return qualified.substr(0, qualified.find('.')); }

/// "A_shared": the shared-memory copy of an Input staged by stage_in_shared.
/// check_names reserves it, so no user name can be it.
inline std::string staging_buffer_name(const std::string &input) { return input + "_shared"; }

/// "A_fetch": the registers through which a RegisterDoubleBuffer copy
/// passes the next tile. Reserved like staging_buffer_name.
inline std::string fetch_buffer_name(const std::string &input) { return input + "_fetch"; }

/// "A_full": the mbarriers of the TMA copies staged at one loop, named
/// after its first input (TmaCopies). Reserved like
/// staging_buffer_name.
inline std::string tma_barrier_name(const std::string &input) { return input + "_full"; }

/// "A_empty": with producer warps, the mbarriers on which the MMA warps
/// release the slots of the same pipeline. Reserved like
/// staging_buffer_name.
inline std::string tma_empty_barrier_name(const std::string &input) { return input + "_empty"; }

/// "A_padded": the workspace copy of an input with its rows padded to
/// 16-byte multiples that the TMA reads (TmaCopies::padded_copy).
/// Reserved like staging_buffer_name.
inline std::string tma_padded_name(const std::string &input) { return input + "_padded"; }

/// "out_tile": the shared-memory tile through which the output's blocks
/// store (gpu_tile_stores). Reserved like staging_buffer_name.
inline std::string output_tile_name(const std::string &output) { return output + "_tile"; }

/// "out.s0.bi": the qualified name of the block loop the output's blocks
/// are clustered along (gpu_cluster), or empty without clusters.
inline std::string cluster_loop_name(const FuncContents &output) {
  return output.schedule.cluster_blocks > 0 ? stage_prefix(output.name, 0) + output.schedule.cluster_var
                                            : std::string();
}

/// "'acc'" or "'acc' (update 0)", as messages name a stage.
inline std::string stage_description(const FuncContents &func, size_t stage) {
  return stage == 0 ? "'" + func.name + "'" : str_cat("'", func.name, "' (update ", stage - 1, ")");
}

} // namespace coalesce
