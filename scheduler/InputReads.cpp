#include "scheduler/InputReads.h"

#include "dsl/IRVisitor.h"
#include "scheduler/EvaluateInt.h"
#include "scheduler/LoopNames.h"

#include <algorithm>

namespace coalesce {

namespace {

// Whether a definition calls the input, and the extents of its reduction
// variables (each once, by name).
class ScanDefinition : public IRVisitor {
public:
  explicit ScanDefinition(const std::string &input) : input_(input) {}
  bool reads = false;
  std::vector<std::string> names;
  std::vector<Expr> extents;

private:
  using IRVisitor::visit;
  const std::string &input_;
  void visit(const Call *op) override {
    reads |= op->call_type == CallType::Input && op->name == input_;
    IRVisitor::visit(op);
  }
  void visit(const Variable *op) override {
    if (op->variable_kind == VariableKind::Reduction &&
        std::find(names.begin(), names.end(), op->name) == names.end()) {
      names.push_back(op->name);
      extents.push_back(op->reduction_extent);
    }
    IRVisitor::visit(op);
  }
};

} // namespace

std::vector<InputRead> input_reads(const Environment &env, const std::string &name) {
  std::vector<InputRead> reads;
  for (const FuncContents &func : env.funcs) {
    std::vector<const Definition *> definitions = {&func.pure};
    for (const Definition &update : func.updates)
      definitions.push_back(&update);
    for (size_t d = 0; d < definitions.size(); ++d) {
      ScanDefinition scan(name);
      for (const Expr &arg : definitions[d]->args)
        scan.visit_expr(arg);
      if (definitions[d]->value.defined())
        scan.visit_expr(definitions[d]->value);
      if (scan.reads)
        reads.push_back(InputRead{stage_description(func, d), scan.extents});
    }
  }
  return reads;
}

bool never_read(const std::vector<InputRead> &reads, const std::map<std::string, int64_t> &params) {
  for (const InputRead &read : reads) {
    bool empty = false;
    for (const Expr &extent : read.reduction_extents)
      empty |= evaluate_int(extent, params) <= 0;
    if (!empty)
      return false;
  }
  return true;
}

} // namespace coalesce
