#include "scheduler/TensorizeMma.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <algorithm>
#include <map>

namespace coalesce {

namespace {

// True if `e` reads Input `input` itself or a buffer staged from it (an
// Allocate whose staged_input is `input`, among `allocations`).
class ReadsInput : public IRVisitor {
public:
  ReadsInput(std::string input, const std::map<std::string, const Allocate *> &allocations)
      : input_(std::move(input)), allocations_(allocations) {}
  bool found = false;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    auto allocation = allocations_.find(op->buffer);
    found |= op->buffer == input_ || (allocation != allocations_.end() && allocation->second->staged_input == input_);
    IRVisitor::visit(op);
  }
  std::string input_;
  const std::map<std::string, const Allocate *> &allocations_;
};

bool reads(const Expr &e, const std::string &input, const std::map<std::string, const Allocate *> &allocations) {
  ReadsInput finder(input, allocations);
  finder.visit_expr(e);
  return finder.found;
}

// `e` with every let in `lets` substituted, to a fixed point (lets refer to
// lets), so that it mentions loop variables only.
Expr expand(Expr e, const std::map<std::string, Expr> &lets) {
  for (int depth = 0; depth < 32; ++depth) {
    Expr next = substitute(lets, e);
    if (next.same_as(e))
      return e;
    e = next;
  }
  internal_error("lets nest deeper than 32 in an MMA operand");
}

struct MmaStage {
  const FuncContents *func;
  size_t index;
  std::string prefix;
  MmaOperands operands;
};

class Tensorize : public IRMutator {
public:
  explicit Tensorize(std::vector<MmaStage> stages) : stages_(std::move(stages)) {}
  int replaced = 0;

private:
  using IRMutator::visit;
  std::vector<MmaStage> stages_;
  std::map<std::string, Expr> lets_;                    // every let around the current node
  std::map<std::string, const Allocate *> allocations_; // every allocation seen, by name

  Stmt visit(const LetStmt *op, const Stmt &self) override {
    auto saved = lets_.find(op->name) == lets_.end() ? Expr() : lets_[op->name];
    lets_[op->name] = op->value;
    Stmt result = IRMutator::visit(op, self);
    if (saved.defined())
      lets_[op->name] = saved;
    else
      lets_.erase(op->name);
    return result;
  }

  Stmt visit(const Allocate *op, const Stmt &self) override {
    allocations_[op->name] = op;
    return IRMutator::visit(op, self);
  }

  Stmt visit(const For *op, const Stmt &self) override {
    for (const MmaStage &stage : stages_) {
      const StageSchedule &schedule = stage.func->schedule.stages[stage.index];
      const MmaLayout &layout = schedule.mma_layout;
      bool group = is_warpgroup_mma(schedule.mma.kind);
      if (!group && op->name == stage.prefix + layout.frag_i)
        return replace(self, stage);
      if (group && op->name == stage.prefix + layout.mma_j)
        return replace(self, stage);
      if (group && op->name == stage.prefix + layout.lane) {
        // One k step's warpgroup MMAs: the accumulators are ordered before
        // the first, and all have completed after the wait, before anything
        // reads the accumulators or the step's shared tiles are refilled.
        Stmt body = IRMutator::visit(op, self);
        const auto *loop = body.as<For>();
        if (!contains_warpgroup_mma(loop->body))
          return body;
        auto sync = [](Intrinsic which, std::vector<Expr> args = {}) {
          return Evaluate::make(Call::make_intrinsic(which, Int(32), std::move(args)));
        };
        Stmt step = Block::make({sync(Intrinsic::WgmmaFence), loop->body, sync(Intrinsic::WgmmaCommit),
                                 sync(Intrinsic::WgmmaWait, {Expr(in_flight(schedule))})});
        return For::make(loop->name, loop->min, loop->extent, loop->for_kind, step, loop->gpu_dim, loop->reduction_of,
                         loop->role);
      }
      if (group && op->name == stage.prefix + k_outer(schedule) && in_flight(schedule) > 0) {
        // The last step's MMAs complete before anything after the
        // reduction reads the accumulators. The MMA threads wait, in the
        // MMAs' own thread loops: a warpgroup instruction needs whole
        // warpgroups, and producer warps (ProducerWarps)
        // may not make one.
        Stmt loop = IRMutator::visit(op, self);
        Stmt wait = Evaluate::make(Call::make_intrinsic(Intrinsic::WgmmaWait, Int(32), {Expr(0)}));
        for (const std::string &name : {layout.lane, layout.warp}) {
          const For *threads = find_loop(loop, stage.prefix + name);
          COALESCE_INTERNAL_ASSERT(threads, "warpgroup MMA steps without their thread loop '", name, "'");
          wait = For::make(threads->name, threads->min, threads->extent, threads->for_kind, wait, threads->gpu_dim, {},
                           threads->role);
        }
        return Block::make({loop, wait});
      }
    }
    return IRMutator::visit(op, self);
  }

  // The first loop named `name` in `s`.
  static const For *find_loop(const Stmt &s, const std::string &name) {
    struct Find : IRVisitor {
      const std::string &name;
      const For *found = nullptr;
      explicit Find(const std::string &n) : name(n) {}
      using IRVisitor::visit;
      void visit(const For *op) override {
        if (!found && op->name == name)
          found = op;
        IRVisitor::visit(op);
      }
    } find(name);
    find.visit_stmt(s);
    return find.found;
  }

  // The loop of the k steps (the outer loop of the reduction's split).
  static std::string k_outer(const StageSchedule &schedule) {
    const Split *steps = schedule.reduction_split();
    return steps ? steps->outer : std::string();
  }

  // Warpgroup MMA groups a k step leaves in flight, as the staging planned.
  static int in_flight(const StageSchedule &schedule) {
    int stages = 1;
    for (const SharedStaging &staged : schedule.staged_inputs)
      stages = std::max(stages, tile_buffers(staged.copies));
    return mma_groups_in_flight(true, stages);
  }

  static bool contains_warpgroup_mma(const Stmt &s) {
    struct Finder : IRVisitor {
      bool found = false;
      using IRVisitor::visit;
      void visit(const WarpMma *op) override { found |= is_warpgroup_mma(op->kind); }
    } finder;
    finder.visit_stmt(s);
    return finder.found;
  }

  // A warpgroup MMA operand's tile, staged swizzled as [slots][column
  // blocks][rows][W] (stage_in_shared; W = 128 bytes of elements, 64
  // 16-bit or 32 f32; no slots when staged once per step): the
  // descriptor's byte offsets.
  // K-major (A [m][k], a B stored N x K as [n][k], and tf32's B stored
  // transposed as [n][k]): 8-row groups 1024 bytes apart; the leading
  // offset is unused with the swizzle (16, encoded as 1, as the encoding
  // expects): one instruction's k (16 16-bit or 8 f32 elements, 32 bytes)
  // lies inside one 128-byte row. MN-major (bf16/f16's B stored K x N,
  // [k][n]): blocks of 64 columns a tile's rows x 128 bytes apart, 8-row
  // (k) groups 1024 bytes apart. Which one the tile is shows in its load:
  // an MN-major tile's rows run along k.
  MmaSharedOperand shared_operand(const Expr &operand, bool mn_major) {
    Expr e = operand;
    if (const auto *cast = e.as<Cast>())
      e = cast->value;
    if (const auto *round = e.as<Call>(); round && round->intrinsic && is_tf32_conversion(*round->intrinsic))
      e = round->args.at(0);
    const auto *load = e.as<Load>();
    auto found = load ? allocations_.find(load->buffer) : allocations_.end();
    // [slots][column blocks][rows][W] when double buffered or pipelined,
    // [column blocks][rows][W] when staged once per step.
    size_t dims = found != allocations_.end() ? found->second->extents.size() : 0;
    COALESCE_INTERNAL_ASSERT(found != allocations_.end() && found->second->memory == MemoryType::Shared &&
                                 (dims == 3 || dims == 4) && 128 % load->type.bytes() == 0,
                             "a warpgroup MMA operand is not a swizzled shared tile: ", operand);
    auto rows = as_const_int(found->second->extents[dims - 2]);
    COALESCE_INTERNAL_ASSERT(rows, "swizzled tile '", load->buffer, "' without constant rows");
    COALESCE_INTERNAL_ASSERT(expr_uses_var(load->indices[dims - 2], kMmaStep) == mn_major, "warpgroup MMA operand ",
                             operand, " is described ", mn_major ? "MN" : "K", "-major, but its tile's rows run along ",
                             mn_major ? "m or n" : "k");
    MmaSharedOperand result;
    result.mn_major = mn_major;
    result.stride_bytes = 1024;
    result.leading_bytes = mn_major ? static_cast<int>(*rows * 128) : 16;
    return result;
  }

  // frag_i { frag_j { kt { [if k < K] acc = acc + a * b } } }, with lets at
  // each level, becomes one WarpMma.
  Stmt replace(const Stmt &frag_i, const MmaStage &stage) {
    const StageSchedule &schedule = stage.func->schedule.stages[stage.index];
    const MmaLayout &layout = schedule.mma_layout;
    MmaKind kind = schedule.mma.kind;
    bool group = is_warpgroup_mma(kind);
    std::map<std::string, Expr> lets = lets_;
    std::vector<std::string> expected = {stage.prefix + layout.frag_i, stage.prefix + layout.frag_j,
                                         stage.prefix + schedule.mma.k_inner};
    std::vector<int64_t> extents = {2, 2, mma_k(kind)};
    if (group) {
      // A warpgroup MMA also covers the warp's 8-column fragments.
      expected.insert(expected.begin(), stage.prefix + layout.mma_j);
      extents.insert(extents.begin(), layout.warp_n / 8);
    }
    Stmt s = frag_i;
    size_t level = 0;
    const Store *store = nullptr;
    const Block *fused = nullptr; // fused reductions' updates (fuse_reduction_with): one store each
    while (!store && !fused) {
      if (const auto *loop = s.as<For>()) {
        COALESCE_INTERNAL_ASSERT(level < expected.size() && loop->name == expected[level] && is_const(loop->min, 0) &&
                                     as_const_int(loop->extent) == extents[level],
                                 "unexpected loop '", loop->name, "' in the MMA nest");
        ++level;
        s = loop->body;
      } else if (const auto *let = s.as<LetStmt>()) {
        lets[let->name] = let->value;
        s = let->body;
      } else if (const auto *guard = s.as<IfThenElse>()) {
        // The reduction's tail guard: check_mma made sure the operands are
        // zero past the end, so the overhanging products add 0.
        COALESCE_INTERNAL_ASSERT(!guard->else_case.defined(), "MMA nest with an else branch");
        s = guard->then_case;
      } else if ((fused = s.as<Block>())) {
        COALESCE_INTERNAL_ASSERT(level == expected.size(), "fused MMA updates above the instruction's loops: ", s);
      } else {
        store = s.as<Store>();
        COALESCE_INTERNAL_ASSERT(store, "the MMA nest holds something other than one store: ", s);
      }
    }
    COALESCE_INTERNAL_ASSERT(level == expected.size(), "MMA nest without its three loops");
    if (fused) {
      // One instruction per sum, each with its own operands, on the loops
      // (named after the first update) that both share.
      std::vector<Stmt> instructions;
      for (const Stmt &update : fused->stmts) {
        const auto *sum = update.as<Store>();
        COALESCE_INTERNAL_ASSERT(sum, "fused MMA updates hold something other than stores: ", update);
        auto owner = std::find_if(stages_.begin(), stages_.end(),
                                  [&](const MmaStage &candidate) { return candidate.func->name == sum->buffer; });
        COALESCE_INTERNAL_ASSERT(owner != stages_.end(), "fused MMA update of '", sum->buffer, "' without its stage");
        instructions.push_back(instruction(sum, stage, owner->operands, lets));
      }
      return Block::make(instructions);
    }
    return instruction(store, stage, stage.operands, lets);
  }

  // The instruction computing `store` (acc = acc + a * b) over the loops
  // of `stage`, reading `operands`.
  Stmt instruction(const Store *store, const MmaStage &stage, const MmaOperands &operands,
                   const std::map<std::string, Expr> &lets) {
    const StageSchedule &schedule = stage.func->schedule.stages[stage.index];
    const MmaLayout &layout = schedule.mma_layout;
    MmaKind kind = schedule.mma.kind;
    bool group = is_warpgroup_mma(kind);
    const auto *add = store->value.as<Add>();
    const auto *mul = add ? add->b.as<Mul>() : nullptr;
    COALESCE_INTERNAL_ASSERT(mul && add->a.as<Load>(), "MMA store is not acc + a * b: ", store->value);

    // The element (mma.m, mma.n) of the instruction tile and step mma.k, as
    // the loops the instruction replaces: frag_i = m / 8, frag_j = n % 2,
    // lane = (m % 8) * 4 + n / 2 (which lane owns it), k_inner = k.
    Expr m = Variable::make(Int(32), kMmaRow), n = Variable::make(Int(32), kMmaColumn);
    Expr k = Variable::make(Int(32), kMmaStep);
    std::string frag_row = stage.prefix + layout.frag_i, frag_j = stage.prefix + layout.frag_j;
    std::map<std::string, Expr> element = {{frag_row, Variable::make(Int(32), kMmaFragRow)},
                                           {frag_j, Variable::make(Int(32), kMmaFragColumn)}};
    std::map<std::string, Expr> operand = {{frag_row, m / 8}, {frag_j, n % 2}};
    operand[stage.prefix + layout.lane] = (m % 8) * 4 + n / 2;
    operand[stage.prefix + schedule.mma.k_inner] = k;
    Expr warp = Variable::make(Int(32), stage.prefix + layout.warp);
    if (group) {
      // (mma.m, mma.n) in the warpgroup's 64 x N tile: row m is row m % 16
      // of warp 4 (warp / 4) + m / 16; column n is in fragment n / 8.
      std::string mma_j = stage.prefix + layout.mma_j;
      element[mma_j] = Variable::make(Int(32), kMmaFragBlock);
      operand[mma_j] = n / 8;
      operand[frag_row] = (m % 16) / 8;
      operand[stage.prefix + layout.lane] = (m % 8) * 4 + (n % 8) / 2;
      operand[stage.prefix + layout.warp] = (warp / 4) * 4 + m / 16;
    }
    auto operand_value = [&](const Expr &e) { return simplify(substitute(operand, expand(e, lets))); };
    // The instruction's first operand is the input whose rows run along
    // its M: A, or B where the tile's rows run along j (swap-AB).
    Expr x = operand_value(mul->a), y = operand_value(mul->b);
    const std::string &rows = operands.row_operand(), &columns = operands.column_operand();
    Expr a = reads(x, rows, allocations_) ? x : y, b = a.same_as(x) ? y : x;
    COALESCE_INTERNAL_ASSERT(reads(a, rows, allocations_) && reads(b, columns, allocations_),
                             "MMA operands do not read '", rows, "' and '", columns, "'");
    if (mma_reads_f32(kind)) {
      // The instruction sees its f32 operands rounded or truncated to tf32;
      // so does the host, which runs this statement as written.
      Intrinsic to_tf32 = mma_rounds_to_tf32(kind) ? Intrinsic::RoundToTf32 : Intrinsic::TruncateToTf32;
      a = Call::make_intrinsic(to_tf32, Float(32), {a});
      b = Call::make_intrinsic(to_tf32, Float(32), {b});
    }
    std::vector<Expr> indices;
    for (const Expr &index : store->indices)
      indices.push_back(simplify(substitute(element, expand(index, lets))));
    Expr acc = Load::make(Float(32), store->buffer, indices);
    // A first: the GPU back end gathers the factors' fragments by position.
    Stmt update = Store::make(store->buffer, indices, Add::make(acc, Mul::make(a, b)));
    ++replaced;
    Expr lane = Variable::make(Int(32), stage.prefix + layout.lane);
    if (group) {
      // Either operand may lie MN-major (a B stored K x N, staged as it lies).
      return WarpMma::make_warpgroup(kind, warp, lane, layout.warp_n,
                                     shared_operand(a, !row_operand_staged_k_major(kind, operands)),
                                     shared_operand(b, !column_operand_staged_k_major(kind, operands)), update);
    }
    return WarpMma::make(kind, lane, update);
  }
};

} // namespace

Stmt tensorize_mma(const Stmt &s, const Environment &env) {
  std::vector<MmaStage> stages;
  for (const FuncContents &func : env.funcs)
    for (size_t index = 1; index < func.schedule.stages.size(); ++index)
      if (func.schedule.stages[index].mma.kind != MmaKind::None)
        stages.push_back(MmaStage{&func, index, stage_prefix(func.name, index), mma_operands(func, index)});
  if (stages.empty())
    return s;
  Tensorize pass(stages);
  Stmt result = pass.mutate(s);
  COALESCE_INTERNAL_ASSERT(pass.replaced > 0, "no MMA nest found for a stage mapped by mma()");
  return result;
}

} // namespace coalesce
