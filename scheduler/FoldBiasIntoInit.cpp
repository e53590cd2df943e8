#include "scheduler/FoldBiasIntoInit.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Substitute.h"

namespace coalesce {

namespace {

bool reads(const Expr &e, const std::string &func);

bool is_zero_sum(const FuncContents &func) {
  const auto *init = func.pure.value.as<FloatImm>();
  if (!init || init->value != 0.0 || func.updates.empty())
    return false;
  for (const Definition &update : func.updates) {
    const auto *add = update.value.as<Add>();
    const auto *self = add ? add->a.as<Call>() : nullptr;
    if (!self || self->name != func.name || reads(add->b, func.name))
      return false; // an elementwise update such as acc + acc would add b twice
  }
  return true;
}

class CallsAnyFunc : public IRVisitor {
public:
  bool found = false;
  int calls_of_producer = 0;
  std::string producer;
  using IRVisitor::visit;
  void visit(const Call *op) override {
    found |= op->call_type == CallType::Func;
    calls_of_producer += op->call_type == CallType::Func && op->name == producer;
    IRVisitor::visit(op);
  }
};

bool reads(const Expr &e, const std::string &func) {
  CallsAnyFunc calls;
  calls.producer = func;
  calls.visit_expr(e);
  return calls.calls_of_producer > 0;
}

// Finds the first acc(...) + b (or b + acc(...)) with acc a zero-started sum,
// and replaces it by acc(...).
class Fold : public IRMutator {
public:
  explicit Fold(const Environment &env) : env_(env) {}
  const FuncContents *producer = nullptr;
  Expr bias;
  int folded = 0; ///< copies of acc(...) + b replaced by acc(...)
  const Expr &folded_call() const { return folded_call_; }

private:
  using IRMutator::visit;
  const Environment &env_;
  Expr match_; // the sum folded first; every structurally equal copy folds too
  Expr folded_call_;
  const FuncContents *sum_call(const Expr &e) {
    const auto *call = e.as<Call>();
    if (!call || call->call_type != CallType::Func)
      return nullptr;
    const FuncContents *func = env_.find(call->name);
    return func && is_zero_sum(*func) ? func : nullptr;
  }
  Expr visit(const Add *op, const Expr &self) override {
    // gelu(x) reads x = acc + b more than once: every copy of the match folds.
    if (producer && equal(self, match_)) {
      ++folded;
      return folded_call_;
    }
    if (producer)
      return IRMutator::visit(op, self);
    for (auto [call, other] : {std::make_pair(op->a, op->b), std::make_pair(op->b, op->a)})
      if (const FuncContents *func = sum_call(call)) {
        CallsAnyFunc calls;
        calls.visit_expr(other);
        if (calls.found)
          continue;
        producer = func;
        bias = other;
        match_ = self;
        folded_call_ = call;
        ++folded;
        return call;
      }
    return IRMutator::visit(op, self);
  }
};

} // namespace

void fold_bias_into_init(Environment &env) {
  for (FuncContents &func : env.funcs) {
    if (!func.schedule.fold_bias)
      continue;
    Fold fold(env);
    Expr value = fold.mutate(func.pure.value);
    if (!fold.producer)
      user_error("fold_bias_into_init on '", func.name, "': its definition ", to_string(func.pure.value),
                 " has no term acc(...) + b with acc a sum reduction that starts from 0.0f and b free of Func calls");
    CallsAnyFunc reads;
    reads.producer = fold.producer->name;
    reads.visit_expr(value);
    if (reads.calls_of_producer != fold.folded)
      user_error("fold_bias_into_init on '", func.name, "': its definition ", to_string(func.pure.value), " reads '",
                 fold.producer->name, "' outside ", to_string(fold.folded_call()), " + ", to_string(fold.bias),
                 ", where the folded bias would be added too");
    std::vector<std::string> consumers = env.consumers_of(fold.producer->name);
    if (consumers.size() != 1)
      user_error("fold_bias_into_init on '", func.name, "': '", fold.producer->name,
                 "' is also read by other Funcs, which would see the bias too");
    std::map<std::string, Expr> rename;
    FuncContents &producer = *env.find(fold.producer->name);
    for (size_t d = 0; d < func.pure_vars.size(); ++d)
      rename[func.pure_vars[d]] = Variable::make(Int(32), producer.pure_vars[d]);
    producer.pure.value = substitute(rename, fold.bias);
    func.pure.value = value;
  }
}

} // namespace coalesce
