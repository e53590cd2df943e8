#include "scheduler/CombineSlicesKernel.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "scheduler/DefinitionAtPoint.h"
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
  // The epilogue at the point's coordinates (substituted: a let named after
  // the user's variable could capture this nest's kz_block).
  std::vector<Expr> store_point = coordinates(flat);
  Expr value = definition_at_point(output, store_point, [&](const std::string &func) {
    COALESCE_INTERNAL_ASSERT(func == producer->name, "the combine of '", producer->name, "' reads the Func '", func,
                             "', which check_split_k refuses");
    return sum;
  });
  steps.push_back(each_element(IfThenElse::make(flat < total, Store::make(output.name, store_point, value))));

  Stmt body = Allocate::make(sums, producer->type, MemoryType::Register, {Expr(kCombineElements)}, Block::make(steps));
  body = For::make(thread, 0, kCombineThreads, ForKind::GpuThread, body, 0, {}, LoopRole::SliceCombine);
  body = For::make(block, 0, simplify(ceil_div(total, kCombineThreads * kCombineElements)), ForKind::GpuBlock, body, 0,
                   {}, LoopRole::SliceCombine);
  return Block::make({s, body});
}

} // namespace coalesce
