#include "scheduler/CheckNames.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <map>
#include <set>

namespace coalesce {

namespace {

// The reduction variables of a Func's updates.
class FindReductionVars : public IRVisitor {
public:
  std::set<std::string> names;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Reduction)
      names.insert(op->name);
  }
};

const char *const kRule = "every name must be unique among the pipeline's Params, Inputs, Funcs, Vars, RDoms and "
                          "loops";

} // namespace

void check_names(const Environment &env) {
  // Global name -> what it names, for messages. make_environment already
  // rejected two Funcs, Inputs or Params of one name, and the three kinds
  // sharing one.
  std::map<std::string, std::string> global;
  for (const std::string &param : env.params)
    global[param] = "the Param '" + param + "'";
  for (const auto &[name, input] : env.inputs)
    global[name] = "the Input '" + name + "'";
  for (const FuncContents &func : env.funcs)
    global[func.name] = "the Func '" + func.name + "'";

  std::map<std::string, std::string> reserved;
  for (const auto &[name, input] : env.inputs) {
    reserved[staging_buffer_name(name)] = "the shared-memory copy of Input '" + name + "' (stage_in_shared)";
    reserved[fetch_buffer_name(name)] = "the register copy of Input '" + name + "' (stage_in_shared)";
    reserved[tma_barrier_name(name)] = "the barriers of the TMA copies of Input '" + name + "' (stage_in_shared)";
    reserved[tma_empty_barrier_name(name)] =
        "the barriers on which producer warps wait for the slots of Input '" + name + "' (stage_in_shared)";
    reserved[tma_padded_name(name)] =
        "the copy of Input '" + name + "' that the TMA reads (TmaCopies::padded_copy)";
  }
  reserved[output_tile_name(env.output().name)] =
      "the shared-memory tile of the output '" + env.output().name + "' (gpu_tile_stores)";
  if (env.output().schedule.tile_stores == TileStores::SumsThroughShared)
    for (const FuncContents &func : env.funcs) // which the output reads is known after inlining
      reserved[output_tile_name(func.name)] = "the shared-memory tile of the sums of Func '" + func.name +
                                              "' (gpu_tile_stores(TileStores::SumsThroughShared))";
  for (const auto &[name, use] : global)
    if (reserved.count(name))
      user_error(
          "'", name, "' is ", use, ", but Coalesce names ", reserved[name], " '", name,
          "'; names ending in _shared, _fetch, _full, _empty or _padded after an Input's name, and _tile after the "
          "output's, are reserved (with TileStores::SumsThroughShared, _tile after every Func's too): rename ",
          use);

  for (const FuncContents &func : env.funcs) {
    FindReductionVars rvars;
    for (const Definition &update : func.updates)
      rvars.visit_expr(update.value);
    std::set<std::string> pure(func.pure_vars.begin(), func.pure_vars.end());
    for (const std::string &var : pure)
      if (rvars.names.count(var))
        user_error("'", var, "' names both a Var and an RDom of Func '", func.name, "'; ", kRule,
                   ": rename one of them");
    // The Func's own names: its Vars, its RDoms and every loop its
    // schedule made (splits, and the consumer's loops that compute_at
    // mirrored).
    std::set<std::string> local(pure.begin(), pure.end());
    local.insert(rvars.names.begin(), rvars.names.end());
    for (const StageSchedule &stage : func.schedule.stages) {
      for (const Dim &dim : stage.dims)
        local.insert(dim.var);
      for (const Split &split : stage.splits) {
        local.insert(split.outer);
        local.insert(split.inner);
      }
    }
    // split_k's slice loop is a loop of this Func too (GPU z, inside the
    // fuse site), though no stage lists it: split_k(acc, k, K, 3) made a
    // block loop named like the Param K.
    if (func.schedule.split_k.requested())
      local.insert(func.schedule.split_k.slice_var);
    for (const std::string &name : local) {
      const char *kind = pure.count(name) ? "Var" : rvars.names.count(name) ? "RDom" : "loop";
      auto clash = global.find(name);
      if (clash != global.end())
        user_error("the ", kind, " '", name, "' of Func '", func.name, "' has the name of ", clash->second, "; ",
                   kRule, " (inside the loop, '", name, "' would mean the ", kind, ", not ", clash->second,
                   "): rename the ", kind);
      auto internal = reserved.find(name);
      if (internal != reserved.end())
        user_error("the ", kind, " '", name, "' of Func '", func.name, "' has the name Coalesce gives ",
                   internal->second, "; rename the ", kind);
    }
  }
}

} // namespace coalesce
