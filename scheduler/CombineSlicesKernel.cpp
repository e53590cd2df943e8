#include "scheduler/CombineSlicesKernel.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/SplitKSlices.h"

namespace coalesce {

namespace {

// Threads per block, and elements per thread: 256 consecutive elements per
// block, so that the small outputs split-K serves (256 x 256: 65,536
// elements) still give every multiprocessor a block or two.
constexpr int kCombineThreads = 128;
constexpr int kCombineElements = 2;
// Slices whose loads a thread issues before the first add: all of them up
// to this many (the unrolled loop's loads are independent of the adds, so
// they are all in flight at once), in a loop beyond.
constexpr int kUnrolledSlices = 64;

Expr var(const std::string &name) { return Variable::make(Int(32), name); }

// The output's definition at the combine's point: its variables are the
// point's coordinates, its read of the split Func the element's sum, its
// reads of inputs plain loads.
class CombinedValue : public IRMutator {
public:
  CombinedValue(const std::string &producer, const std::map<std::string, Expr> &coordinates, Expr sum)
      : producer_(producer), coordinates_(coordinates), sum_(std::move(sum)) {}

private:
  using IRMutator::visit;
  Expr visit(const Variable *op, const Expr &self) override {
    auto found = coordinates_.find(op->name);
    return op->variable_kind == VariableKind::Param || found == coordinates_.end() ? self : found->second;
  }
  Expr visit(const Call *op, const Expr &self) override {
    Expr rebuilt = IRMutator::visit(op, self);
    const auto *call = rebuilt.as<Call>();
    switch (call->call_type) {
    case CallType::Input:
      return Load::make(call->type, call->name, call->args);
    case CallType::Func:
      COALESCE_INTERNAL_ASSERT(call->name == producer_, "the combine of '", producer_, "' reads the Func '", call->name,
                               "', which check_split_k refuses");
      return sum_;
    case CallType::Intrinsic:
      return rebuilt;
    }
    return rebuilt;
  }
  const std::string &producer_;
  const std::map<std::string, Expr> &coordinates_;
  const Expr sum_;
};

} // namespace

Stmt add_slice_combine_kernel(const Stmt &s, const Environment &env) {
  const FuncContents &output = env.output();
  const SplitReduction &split = output.schedule.split_k;
  if (!split.requested() || split_counts_arrivals(split.mode))
    return s;
  const FuncContents *producer = env.find(split.producer);
  COALESCE_INTERNAL_ASSERT(producer, "split_k of '", split.producer, "', not a Func of the pipeline");
  // Printed as kz_block, kz_thread, ... (strip_stage_prefixes), after the
  // slice variable, a name no loop or variable of the user's has.
  const std::string base = slice_loop_name(output) + ".";
  const std::string block = base + split.slice_var + "_block", thread = base + split.slice_var + "_thread",
                    element = base + split.slice_var + "_e", slice = base + split.slice_var + "_sum";
  const std::string sums = producer->name + ".sums", partials = partials_name(producer->name);

  // The point `flat` of the domain, row-major.
  const std::vector<Expr> &domain = env.domain;
  Expr total = 1;
  for (const Expr &extent : domain)
    total = total * extent;
  total = simplify(total);
  auto coordinates = [&](const Expr &flat) {
    std::vector<Expr> point(domain.size());
    Expr rest = flat;
    for (size_t d = domain.size(); d-- > 0;) {
      point[d] = simplify(d == 0 ? rest : rest % domain[d]);
      rest = rest / domain[d];
    }
    return point;
  };
  Expr flat = simplify((var(block) * kCombineElements + var(element)) * kCombineThreads + var(thread));
  // Loads read the last point in place of those past the end (their sums
  // are never stored), so that no load waits behind a branch.
  std::vector<Expr> read_point = coordinates(min(flat, total - 1));
  auto partial = [&](const Expr &slice_index) {
    std::vector<Expr> index = {slice_index};
    index.insert(index.end(), read_point.begin(), read_point.end());
    return Load::make(producer->type, partials, index);
  };
  Expr sum = Load::make(producer->type, sums, {var(element)});
  auto each_element = [&](Stmt body) {
    return For::make(element, 0, kCombineElements, ForKind::Unrolled, std::move(body), -1, {}, LoopRole::SliceCombine);
  };

  std::vector<Stmt> steps = {each_element(Store::make(sums, {var(element)}, partial(0)))};
  if (split.slices > 1)
    steps.push_back(For::make(
        slice, 1, split.slices - 1, split.slices - 1 <= kUnrolledSlices ? ForKind::Unrolled : ForKind::Serial,
        each_element(Store::make(sums, {var(element)}, sum + partial(var(slice)))), -1, {}, LoopRole::SliceCombine));
  // The epilogue at the point's coordinates, put in place of the output's
  // variables rather than bound to their names: a let named after one (the
  // printed names lose their qualifiers) could capture a loop of this nest
  // that the user's variable happens to be named like (kz_block).
  std::vector<Expr> store_point = coordinates(flat);
  std::map<std::string, Expr> point;
  for (size_t d = 0; d < output.pure_vars.size(); ++d)
    point[output.pure_vars[d]] = store_point[d];
  Expr value = CombinedValue(producer->name, point, sum).mutate(output.pure.value);
  steps.push_back(each_element(IfThenElse::make(flat < total, Store::make(output.name, store_point, value))));

  Stmt body = Allocate::make(sums, producer->type, MemoryType::Register, {Expr(kCombineElements)}, Block::make(steps));
  body = For::make(thread, 0, kCombineThreads, ForKind::GpuThread, body, 0, {}, LoopRole::SliceCombine);
  body = For::make(block, 0, simplify(ceil_div(total, kCombineThreads * kCombineElements)), ForKind::GpuBlock, body, 0,
                   {}, LoopRole::SliceCombine);
  return Block::make({s, body});
}

} // namespace coalesce
