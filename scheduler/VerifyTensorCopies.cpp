#include "scheduler/VerifyTensorCopies.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/TmaInputs.h"

#include <map>
#include <set>

namespace coalesce {

namespace {

// The conjuncts of a condition: a && b && c -> a, b, c.
void conjuncts(const Expr &e, std::vector<Expr> &out) {
  if (const auto *both = e.as<And>()) {
    conjuncts(both->a, out);
    conjuncts(both->b, out);
    return;
  }
  out.push_back(e);
}

class Verify : public IRVisitor {
public:
  explicit Verify(const Environment &env) : env_(env) {
    for (const TmaInputCopy &copy : tma_input_copies(env))
      padded_[tma_padded_name(copy.input->name)] = copy;
    for (const FuncContents &func : env.funcs)
      for (const StageSchedule &stage : func.schedule.stages)
        for (const SharedStaging &staged : stage.staged_inputs)
          if (mma_rounds_to_tf32(stage.mma.kind))
            read_rounded_.insert(staged.input);
  }

private:
  using IRVisitor::visit;
  void visit(const IfThenElse *op) override {
    visit_expr(op->condition);
    size_t known = holding_.size();
    conjuncts(op->condition, holding_);
    visit_stmt(op->then_case);
    holding_.resize(known);
    failing_.push_back(op->condition);
    visit_stmt(op->else_case);
    failing_.pop_back();
  }
  void visit(const TensorCopy *op) override {
    IRVisitor::visit(op);
    // The TMA traps on a box that starts a row off a 16-byte multiple
    // (stage_inputs_in_shared refuses such a schedule).
    const int per_16_bytes = 16 / op->destination.type().bytes();
    if (!provably_multiple_of(simplify(op->origin.back()), per_16_bytes))
      internal_error("a TMA copy of '", op->input, "' starts its rows at ", to_string(op->origin.back()),
                     ", not provably a multiple of 16 bytes (", per_16_bytes, " elements)");
    // A box the blocks of a cluster share is the same box for each of them.
    if (op->multicast > 1) {
      const FuncSchedule &output = env_.output().schedule;
      if (output.cluster_blocks != op->multicast)
        internal_error("a TMA copy of '", op->input, "' is multicast to ", op->multicast,
                       " blocks, but the output runs clusters of ", output.cluster_blocks);
      std::string cluster_loop = cluster_loop_name(env_.output());
      for (const Expr &coordinate : op->origin)
        if (expr_uses_var(coordinate, cluster_loop))
          internal_error("a TMA copy of '", op->input, "' multicast to the blocks of a cluster starts at ",
                         to_string(coordinate), ", which depends on the clustered block loop '",
                         output.cluster_var, "'");
    }
    // The TMA copies bits as they are, and the MMAs fed f32 tiles (tf32)
    // multiply the bits they find: a tile a rounding kind reads comes from
    // a copy that rounded it, as the cp.async copies round in place (the
    // truncating kinds read the bits as they lie).
    auto padded = padded_.find(op->input);
    const std::string source = padded == padded_.end() ? op->input : padded->second.input->name;
    if (op->destination.type() == Float(32) && read_rounded_.count(source) &&
        (padded == padded_.end() || !padded->second.round_to_tf32))
      internal_error("a TMA copy of f32 elements reads '", op->input,
                     "', which is not a copy rounded to tf32, for a tf32 MMA that rounds its operands");
    if (padded != padded_.end()) {
      // A copy made only where the input's rows are ragged has no rows
      // elsewhere, and an all-zero tensor map.
      if (!padded->second.only_where_ragged)
        return;
      Expr describable = simplify(tma_describable(*padded->second.input));
      if (!is_const(describable, 0)) {
        bool checked = false;
        for (const Expr &failed : failing_)
          checked |= equal(failed, describable);
        if (!checked)
          internal_error("a TMA copy of '", op->input, "', which is made only where the rows of '",
                         padded->second.input->name,
                         "' are ragged, is not in the else-branch of the test that they "
                         "are whole 16-byte multiples (",
                         to_string(describable), ")");
      }
      return;
    }
    auto input = env_.inputs.find(op->input);
    if (input == env_.inputs.end())
      internal_error("a TMA copy reads '", op->input, "', which is neither an input nor a row-padded copy of one");
    Expr describable = simplify(tma_describable(*input->second));
    if (auto constant = as_const_int(describable); constant && *constant != 0)
      return;
    std::vector<Expr> needed;
    conjuncts(describable, needed);
    for (const Expr &need : needed) {
      bool checked = false;
      for (const Expr &held : holding_)
        checked |= equal(held, need);
      if (!checked)
        internal_error("a TMA copy of '", op->input, "' is not under the test that its rows are whole 16-byte "
                       "multiples (", to_string(need), "): where they are not, its tensor map is left zeroed");
    }
  }
  const Environment &env_;
  std::map<std::string, TmaInputCopy> padded_; // by workspace name
  std::set<std::string> read_rounded_;         // inputs a tf32 MMA that rounds reads
  std::vector<Expr> holding_; // conjuncts of the enclosing then-branches' conditions
  std::vector<Expr> failing_; // conditions of the enclosing else-branches
};

} // namespace

void verify_tensor_copies(const Stmt &s, const Environment &env) { Verify(env).visit_stmt(s); }

} // namespace coalesce
