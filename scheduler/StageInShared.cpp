#include "scheduler/StageInShared.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <functional>
#include <map>

namespace coalesce {

namespace {

struct LoopInfo {
  Expr min, extent;
  ForKind kind;
  int gpu_dim;
};

// The loops and lets inside the staging loop.
class ScanBody : public IRVisitor {
public:
  std::map<std::string, LoopInfo> loops;
  std::vector<std::string> thread_loops; // the first chain of thread loops, outermost first
  std::map<std::string, Expr> lets;

private:
  using IRVisitor::visit;
  void visit(const For *op) override {
    loops[op->name] = LoopInfo{op->min, op->extent, op->for_kind, op->gpu_dim};
    if (op->for_kind == ForKind::GpuThread && (thread_loops.empty() || in_thread_chain_))
      thread_loops.push_back(op->name);
    bool was = in_thread_chain_;
    in_thread_chain_ = op->for_kind == ForKind::GpuThread && thread_loops.back() == op->name;
    IRVisitor::visit(op);
    in_thread_chain_ = was;
  }
  void visit(const LetStmt *op) override {
    lets[op->name] = op->value;
    IRVisitor::visit(op);
  }
  bool in_thread_chain_ = false;
};

// Every call of the input inside the loop, with lets expanded.
class FindCalls : public IRVisitor {
public:
  FindCalls(const std::string &input, const std::map<std::string, Expr> &lets) : input_(input), lets_(lets) {}
  std::vector<std::vector<Expr>> calls;

private:
  using IRVisitor::visit;
  void visit(const Call *op) override {
    IRVisitor::visit(op);
    if (op->call_type != CallType::Input || op->name != input_)
      return;
    std::vector<Expr> args;
    for (const Expr &arg : op->args)
      args.push_back(expand(arg));
    calls.push_back(args);
  }
  Expr expand(Expr e) const {
    for (int depth = 0; depth < 16; ++depth) { // lets refer to lets a few levels deep
      Expr next = substitute(lets_, e);
      if (next.same_as(e))
        break;
      e = next;
    }
    return simplify(e);
  }
  const std::string &input_;
  const std::map<std::string, Expr> &lets_;
};

struct Region {
  std::vector<Expr> min;      // per dimension, in terms of loops outside the staging loop
  std::vector<int64_t> extent;
};

// Splits an affine index into its part outside the staging loop and the
// span of its inner-loop terms.
bool affine_span(const Expr &index, const std::map<std::string, LoopInfo> &inner, Expr *base, int64_t *extent) {
  // Walk the top-level sum.
  std::vector<std::pair<Expr, int64_t>> terms;
  std::function<void(const Expr &, int64_t)> walk = [&](const Expr &e, int64_t sign) {
    if (const auto *add = e.as<Add>()) {
      walk(add->a, sign);
      walk(add->b, sign);
    } else if (const auto *sub = e.as<Sub>()) {
      walk(sub->a, sign);
      walk(sub->b, -sign);
    } else {
      terms.emplace_back(e, sign);
    }
  };
  walk(index, 1);
  Expr outer = 0;
  int64_t low = 0, high = 0;
  for (const auto &[term, sign] : terms) {
    Expr var = term;
    int64_t coefficient = sign;
    if (const auto *mul = term.as<Mul>(); mul && as_const_int(mul->b)) {
      var = mul->a;
      coefficient *= *as_const_int(mul->b);
    }
    const auto *variable = var.as<Variable>();
    auto loop = variable ? inner.find(variable->name) : inner.end();
    if (loop == inner.end()) {
      for (const auto &[name, info] : inner)
        if (expr_uses_var(term, name))
          return false;
      outer = outer + (sign < 0 ? 0 - term : term);
      continue;
    }
    auto min = as_const_int(loop->second.min), extent = as_const_int(loop->second.extent);
    if (!min || !extent)
      return false;
    int64_t a = coefficient * *min, b = coefficient * (*min + *extent - 1);
    low += std::min(a, b);
    high += std::max(a, b);
  }
  *base = simplify(outer + static_cast<int>(low));
  *extent = high - low + 1;
  return true;
}

class ReplaceCalls : public IRMutator {
public:
  ReplaceCalls(const std::string &input, const std::string &buffer, const Region &region,
               const std::map<std::string, Expr> &lets)
      : input_(input), buffer_(buffer), region_(region), lets_(lets) {}

private:
  using IRMutator::visit;
  Expr visit(const Call *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *call = e.as<Call>();
    if (call->call_type != CallType::Input || call->name != input_)
      return e;
    std::vector<Expr> indices;
    for (size_t d = 0; d < call->args.size(); ++d) {
      Expr arg = call->args[d];
      for (int depth = 0; depth < 16; ++depth) {
        Expr next = substitute(lets_, arg);
        if (next.same_as(arg))
          break;
        arg = next;
      }
      indices.push_back(simplify(arg - region_.min[d]));
    }
    return Load::make(call->type, buffer_, indices);
  }
  const std::string &input_, &buffer_;
  const Region &region_;
  const std::map<std::string, Expr> &lets_;
};

Stmt copy_nest(const InputContents &input, const std::string &buffer, const Region &region, const ScanBody &scan,
               const std::string &prefix) {
  int64_t elements = 1;
  for (int64_t e : region.extent)
    elements *= e;
  int64_t threads = 1;
  for (const std::string &name : scan.thread_loops)
    threads *= *as_const_int(scan.loops.at(name).extent);
  Expr thread = 0;
  for (const std::string &name : scan.thread_loops)
    thread = thread * static_cast<int>(*as_const_int(scan.loops.at(name).extent)) +
             Variable::make(Int(32), prefix + name);
  std::string element = prefix + "e";
  Expr flat = Variable::make(Int(32), element) * static_cast<int>(threads) + thread;
  std::string flat_name = prefix + "flat";
  Expr flat_var = Variable::make(Int(32), flat_name);
  // Row-major coordinates within the tile.
  std::vector<Expr> coords(region.extent.size());
  int64_t stride = 1;
  for (size_t d = region.extent.size(); d-- > 0;) {
    Expr c = stride == 1 ? flat_var : flat_var / static_cast<int>(stride);
    coords[d] = d == 0 ? c : c % static_cast<int>(region.extent[d]);
    stride *= region.extent[d];
  }
  std::vector<Expr> source;
  for (size_t d = 0; d < coords.size(); ++d)
    source.push_back(simplify(region.min[d] + coords[d]));
  auto input_ptr = std::make_shared<const InputContents>(input);
  Stmt copy = Store::make(buffer, coords, Call::make(input.type, input.name, source, CallType::Input, nullptr, input_ptr));
  if (elements % threads != 0)
    copy = IfThenElse::make(flat_var < static_cast<int>(elements), copy);
  copy = LetStmt::make(flat_name, flat, copy);
  int64_t per_thread = (elements + threads - 1) / threads;
  copy = For::make(element, 0, static_cast<int>(per_thread), per_thread <= 16 ? ForKind::Unrolled : ForKind::Serial, copy);
  for (auto name = scan.thread_loops.rbegin(); name != scan.thread_loops.rend(); ++name) {
    const LoopInfo &loop = scan.loops.at(*name);
    copy = For::make(prefix + *name, loop.min, loop.extent, ForKind::GpuThread, copy, loop.gpu_dim);
  }
  return copy;
}

class StageAtLoop : public IRMutator {
public:
  StageAtLoop(const std::string &loop, const InputContents &input, const std::string &stage)
      : loop_(loop), input_(input), stage_(stage) {}
  bool found = false;

private:
  using IRMutator::visit;
  Stmt visit(const For *op, const Stmt &self) override {
    if (op->name != loop_)
      return IRMutator::visit(op, self);
    found = true;
    ScanBody scan;
    scan.visit_stmt(op->body);
    FindCalls finder(input_.name, scan.lets);
    finder.visit_stmt(op->body);
    std::string short_loop = loop_.substr(loop_.rfind('.') + 1);
    Region region;
    for (size_t d = 0; d < input_.extents.size(); ++d) {
      Expr base;
      int64_t extent = 0;
      for (const auto &call : finder.calls) {
        Expr call_base;
        int64_t call_extent;
        if (!affine_span(call[d], scan.loops, &call_base, &call_extent))
          user_error("in schedule for ", stage_, ": cannot stage '", input_.name, "' in shared memory at '", short_loop,
                     "': its coordinate ", to_string(call[d]), " is not an affine function of the loops inside '",
                     short_loop, "' with constant coefficients");
        if (base.defined() && !is_const(simplify(base - call_base), 0))
          user_error("in schedule for ", stage_, ": cannot stage '", input_.name, "' in shared memory at '", short_loop,
                     "': it is read at tiles that start at different places (", to_string(base), " and ",
                     to_string(call_base), ")");
        base = call_base;
        extent = std::max(extent, call_extent);
      }
      region.min.push_back(base);
      region.extent.push_back(extent);
    }
    std::string buffer = input_.name + "_shared";
    Stmt body = ReplaceCalls(input_.name, buffer, region, scan.lets).mutate(op->body);
    Stmt copy = copy_nest(input_, buffer, region, scan, buffer + ".");
    body = Block::make({copy, Barrier::make(), body, Barrier::make()});
    std::vector<Expr> extents;
    for (int64_t e : region.extent)
      extents.push_back(static_cast<int>(e));
    Stmt loop = For::make(op->name, op->min, op->extent, op->for_kind, body, op->gpu_dim, op->reduction_of);
    return Allocate::make(buffer, input_.type, MemoryType::Shared, extents, loop);
  }
  const std::string &loop_;
  const InputContents &input_;
  const std::string &stage_;
};

} // namespace

Stmt stage_inputs_in_shared(const Stmt &s, const Environment &env) {
  Stmt result = s;
  for (const FuncContents &func : env.funcs)
    for (size_t stage = 0; stage < func.schedule.stages.size(); ++stage)
      for (const SharedStaging &staged : func.schedule.stages[stage].staged_inputs) {
        std::string loop = str_cat(func.name, ".s", stage, ".", staged.at_loop);
        std::string stage_name =
            stage == 0 ? "'" + func.name + "'" : str_cat("'", func.name, "' (update ", stage - 1, ")");
        StageAtLoop pass(loop, *env.inputs.at(staged.input), stage_name);
        result = pass.mutate(result);
        COALESCE_INTERNAL_ASSERT(pass.found, "staging loop '", loop, "' not found");
      }
  return result;
}

} // namespace coalesce
