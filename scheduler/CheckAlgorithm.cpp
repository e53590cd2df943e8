#include "scheduler/CheckAlgorithm.h"

#include "scheduler/ReductionUpdate.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"

#include <vector>

namespace coalesce {

namespace {

class CountCalls : public IRVisitor {
public:
  explicit CountCalls(const std::string &name) : name_(name) {}
  int count = 0;
  bool uses_reduction_var = false;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    count += op->call_type == CallType::Func && op->name == name_;
    IRVisitor::visit(op);
  }
  void visit(const Variable *op) override { uses_reduction_var |= op->variable_kind == VariableKind::Reduction; }
  const std::string name_; // a copy: a caller may pass a temporary, and a reference would dangle
};

int calls_of(const Expr &e, const std::string &name) {
  CountCalls counter(name);
  counter.visit_expr(e);
  return counter.count;
}

bool uses_reduction_var(const Expr &e) {
  CountCalls counter("");
  counter.visit_expr(e);
  return counter.uses_reduction_var;
}

// The summands of a sum: a + b - c gives a, b, c.
void summands(const Expr &e, std::vector<Expr> &out) {
  if (const auto *add = e.as<Add>()) {
    summands(add->a, out);
    summands(add->b, out);
    return;
  }
  if (const auto *sub = e.as<Sub>()) {
    summands(sub->a, out);
    summands(sub->b, out);
    return;
  }
  out.push_back(e);
}

std::string self_call_text(const FuncContents &func) {
  std::string text = func.name + "(";
  for (size_t d = 0; d < func.pure_vars.size(); ++d)
    text += (d ? ", " : "") + func.pure_vars[d];
  return text + ")";
}

// Calls of a Func inside its own definition at other coordinates than its own.
class CheckSelfCalls : public IRVisitor {
public:
  explicit CheckSelfCalls(const FuncContents &func) : func_(func) {}
  std::string bad;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (bad.empty() && op->call_type == CallType::Func && op->name == func_.name && !is_self_call(Expr(op->with_args(op->args)), func_))
      bad = to_string(Expr(op->with_args(op->args)));
  }
  const FuncContents &func_;
};

void check_update(const FuncContents &func, size_t index) {
  const Definition &update = func.updates[index];
  const StageSchedule &stage = func.schedule.stages[index + 1];
  const std::string self = self_call_text(func);
  if (stage.reduction_vars.empty()) {
    // No reduction variable: an elementwise rewrite of the finished value
    // (acc(i, j) = gelu(acc(i, j)) after the sum). Each point reads only
    // its own, complete value, so any function of it is fine, as long as
    // it reads no other point of the Func.
    CheckSelfCalls self_calls(func);
    self_calls.visit_expr(update.value);
    if (!self_calls.bad.empty())
      user_error("update ", index, " of '", func.name, "' reads ", self_calls.bad, "; an update reads '", func.name,
                 "' only at the point it writes, ", self, ": compute shifted or transposed reads from an Input");
    return;
  }
  const char *op_name = nullptr;
  Expr term;
  if (!split_reduction(update.value, func, &op_name, &term) || calls_of(term, func.name) != 0)
    user_error("update ", index, " of '", func.name, "' is not a reduction: its value ", to_string(update.value),
               " must be the running value ", self,
               " combined with one term by one of +, *, min, max. An epilogue folded into the reduction (relu or "
               "a bias applied to the running sum) acts on partial sums: relu of a partial sum is not relu of the "
               "sum. Write the reduction alone, e.g. ", self, " += A(i, k)*B(k, j), and the epilogue as a "
               "separate Func, e.g. out(i, j) = relu(", self, ")");
  if (std::string(op_name) != "+" || stage.allow_reduction_invariant_terms || !uses_reduction_var(update.value))
    return;
  std::vector<Expr> parts;
  summands(term, parts);
  std::string rvars;
  for (const std::string &rvar : stage.reduction_vars)
    rvars += (rvars.empty() ? "'" : ", '") + rvar + "'";
  for (const Expr &part : parts)
    if (!uses_reduction_var(part))
      user_error("update ", index, " of '", func.name, "' adds ", to_string(part),
                 ", which does not depend on the reduction variable ", rvars,
                 ", on every step of the reduction: it is added "
                 "once per step (a bias added K times). Add it once after the reduction in a separate Func, e.g. "
                 "out(i, j) = ", self, " + ", to_string(part), ", or start the reduction from it, ", self, " = ",
                 to_string(part), "; if adding it on every step is intended, call ", func.name, ".update(", index,
                 ").allow_reduction_invariant_terms()");
}

// A caller must read a producer at its own coordinates, f(i, j) in g(i, j):
// then the producer's values for a tile of the caller are exactly that tile,
// which is what compute_at and the fused epilogue rely on.
class CheckCallSites : public IRVisitor {
public:
  explicit CheckCallSites(const FuncContents &caller) : caller_(caller) {}

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (op->call_type != CallType::Func || op->name == caller_.name)
      return;
    bool identity = op->args.size() == caller_.pure_vars.size();
    for (size_t d = 0; identity && d < op->args.size(); ++d) {
      const auto *var = op->args[d].as<Variable>();
      identity = var && var->name == caller_.pure_vars[d];
    }
    if (!identity)
      user_error("'", caller_.name, "' calls '", op->name, "' at ", to_string(Expr(op->with_args(op->args))),
                 "; a Func may call another only at its own coordinates, ", op->name, "(",
                 self_call_text(caller_).substr(caller_.name.size() + 1),
                 ": compute transposed or shifted reads from an Input instead");
  }
  const FuncContents &caller_;
};

} // namespace

void check_algorithm(const Environment &env) {
  for (const FuncContents &func : env.funcs) {
    // A view is the caller's buffer; the others are the compiler's.
    if (!func.output_strides.empty() && func.name != env.output().name)
      user_error("'", func.name, "' declares output strides, but the pipeline's output is '", env.output().name,
                 "': only the output is stored in the caller's buffer, a view of which the strides describe; "
                 "declare them on '",
                 env.output().name, "'");
    CheckCallSites sites(func);
    sites.visit_expr(func.pure.value);
    for (size_t u = 0; u < func.updates.size(); ++u) {
      sites.visit_expr(func.updates[u].value);
      check_update(func, u);
    }
  }
}

} // namespace coalesce
