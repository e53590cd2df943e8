#include "scheduler/PadTmaInputs.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <set>

namespace coalesce {

namespace {

// Threads per block of a copy, and elements per thread and step: each
// thread copies 8 elements of a row 256 apart from 8 independent loads, so
// a warp keeps 8 loads in flight instead of one, and each load and store
// of a warp is 32 consecutive elements (partial writes of a sector, as
// consecutive elements per thread would make, cost more than they save).
constexpr int kCopyThreads = 256;
constexpr int kCopyElements = 8;

Stmt copy_nest(const InputContents &input) {
  COALESCE_INTERNAL_ASSERT(input.extents.size() == 2, "a padded TMA copy of the ", input.extents.size(),
                           "-D input '", input.name, "'");
  const std::string padded = tma_padded_name(input.name);
  std::vector<Expr> padded_extents = tma_padded_extents(input);
  const Expr &rows = input.extents[0], &columns = input.extents[1], &padded_columns = padded_extents[1];
  // Named "A_padded.A_row" and so on: printed as A_row, the kernel named
  // after the buffer (fuse_gpu_thread_loops).
  std::string prefix = padded + "." + input.name;
  std::string row = prefix + "_row", thread = prefix + "_thread", step = prefix + "_step", element = prefix + "_e";
  Expr column = Variable::make(Int(32), step) * (kCopyThreads * kCopyElements) +
                Variable::make(Int(32), element) * kCopyThreads + Variable::make(Int(32), thread);
  Expr r = Variable::make(Int(32), row);
  // The load's column stays inside the row (min), so that the select reads
  // a valid address past the end too; a row of no columns is never copied.
  Expr value = Load::make(input.type, input.name, {r, Min::make(column, columns - 1)});
  Expr zero = input.type == Float(32) ? Expr(0.0f) : Cast::make(input.type, Expr(0.0f));
  // All eight loads into registers first, then the stores: a store between
  // two loads would keep the second from issuing before the first returns.
  std::string piece = prefix + "_piece";
  Expr e = Variable::make(Int(32), element);
  Stmt load = Store::make(piece, {e}, Select::make(column < columns, value, zero));
  Stmt store =
      IfThenElse::make(column < padded_columns, Store::make(padded, {r, column}, Load::make(input.type, piece, {e})));
  auto each_element = [&](const std::string &use, Stmt body) {
    return For::make(element + use, 0, kCopyElements, ForKind::Unrolled,
                     substitute({{element, Variable::make(Int(32), element + use)}}, body), -1, "",
                     LoopRole::PaddedCopy);
  };
  Stmt elements = Allocate::make(piece, input.type, MemoryType::Register, {Expr(kCopyElements)},
                                 Block::make({each_element("", load), each_element("_store", store)}));
  Stmt steps = For::make(step, 0,
                         simplify((padded_columns + (kCopyThreads * kCopyElements - 1)) /
                                  (kCopyThreads * kCopyElements)),
                         ForKind::Serial, elements, -1, "", LoopRole::PaddedCopy);
  Stmt threads = For::make(thread, 0, kCopyThreads, ForKind::GpuThread, steps, 0, "", LoopRole::PaddedCopy);
  return For::make(row, 0, rows, ForKind::GpuBlock, threads, 0, "", LoopRole::PaddedCopy);
}

} // namespace

std::vector<const InputContents *> tma_padded_inputs(const Environment &env) {
  std::set<std::string> names;
  for (const FuncContents &func : env.funcs)
    for (const StageSchedule &stage : func.schedule.stages)
      for (const SharedStaging &staged : stage.staged_inputs)
        if (staged.layout.tma && staged.layout.tma_padded_copy)
          names.insert(staged.input);
  std::vector<const InputContents *> inputs;
  for (const std::string &name : names) {
    auto found = env.inputs.find(name);
    COALESCE_INTERNAL_ASSERT(found != env.inputs.end(), "staged input '", name, "' is no input of the pipeline");
    inputs.push_back(found->second.get());
  }
  return inputs;
}

std::vector<Expr> tma_padded_extents(const InputContents &input) {
  std::vector<Expr> extents = input.extents;
  int per_16_bytes = 16 / input.type.bytes();
  extents.back() = simplify((extents.back() + (per_16_bytes - 1)) / per_16_bytes * per_16_bytes);
  return extents;
}

std::vector<Argument> tma_padded_workspaces(const Environment &env) {
  std::vector<Argument> workspaces;
  for (const InputContents *input : tma_padded_inputs(env)) {
    Argument padded{tma_padded_name(input->name), Argument::Kind::Buffer, input->type, tma_padded_extents(*input),
                    false, {}};
    padded.is_workspace = true;
    workspaces.push_back(padded);
  }
  return workspaces;
}

Stmt pad_tma_inputs(const Stmt &s, const Environment &env) {
  std::vector<Stmt> nests;
  for (const InputContents *input : tma_padded_inputs(env))
    nests.push_back(copy_nest(*input));
  if (nests.empty())
    return s;
  nests.push_back(s);
  return Block::make(nests);
}

} // namespace coalesce
