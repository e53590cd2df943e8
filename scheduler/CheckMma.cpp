#include "scheduler/CheckMma.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"

#include <algorithm>

namespace coalesce {

namespace {

// The operand type an instruction multiplies.
Type operand_type(MmaKind kind) { return mma_instruction(kind).operand; }

// `e` without a widening to f32 around it (how a 16-bit input is read in f32
// arithmetic).
Expr unwiden(const Expr &e) {
  if (const auto *cast = e.as<Cast>(); cast && cast->type == Float(32))
    return cast->value;
  return e;
}

bool is_var(const Expr &e, const std::string &name) {
  const auto *var = e.as<Variable>();
  return var && var->name == name;
}

struct Context {
  const Environment &env;
  const FuncContents &func;
  size_t s;
  std::string where() const { return str_cat("in schedule for ", stage_description(func, s), ": mma: "); }
};

// The update must be acc(i, j) + A(i, k) * B(k, j), with A stored M x K
// (A(i, k)) or K x M (A(k, i)) and B stored K x N (B(k, j)) or N x K
// (W(j, k)), in either order of the factors: the one computation an MMA
// instruction performs.
MmaOperands match_update(const Context &c, MmaKind kind) {
  const FuncContents &func = c.func;
  const Definition &update = func.updates[c.s - 1];
  std::string shape =
      str_cat(func.name, "(i, j) + A(i, k) * B(k, j) (A may be read A(k, i), stored K x M; B W(j, k), stored N x K)");
  auto reject = [&](const std::string &why) {
    user_error(c.where(), "the update ", func.name, "(...) = ", to_string(update.value), " ", why,
               "; a warp MMA computes exactly ", shape, " with A and B inputs of type ", operand_type(kind),
               " and an f32 accumulator");
  };
  if (func.type != Float(32))
    reject(str_cat("accumulates in ", func.type));
  // out(i, j), or out(b..., i, j) with batch variables first: a batch of
  // independent products, one per point of the batch variables.
  if (func.pure_vars.size() < 2)
    reject("is not at least two-dimensional");
  const size_t batch_dims = func.pure_vars.size() - 2;
  const std::vector<std::string> &rvars = func.schedule.stages[c.s].reduction_vars;
  if (rvars.size() != 1)
    reject("does not reduce over exactly one variable");
  const auto *add = update.value.as<Add>();
  const auto *self = add ? add->a.as<Call>() : nullptr;
  bool at_own_point = self && self->name == func.name;
  for (size_t d = 0; at_own_point && d < func.pure_vars.size(); ++d)
    at_own_point = is_var(self->args[d], func.pure_vars[d]);
  if (!at_own_point)
    reject("is not the running value plus one term");
  const auto *mul = add->b.as<Mul>();
  if (!mul)
    reject("adds a term that is not one product");
  const auto *x = unwiden(mul->a).as<Call>(), *y = unwiden(mul->b).as<Call>();
  if (!x || !y || x->call_type != CallType::Input || y->call_type != CallType::Input)
    reject("multiplies something other than two inputs");
  const std::string &i = func.pure_vars[batch_dims], &j = func.pure_vars[batch_dims + 1], &k = rvars[0];
  // An operand's arguments before its last two: batch variables, each at
  // most once, in the output's order (an operand without one is the same
  // for every point of it: a batch stride of 0).
  auto batch_args = [&](const Call *call) {
    if (call->args.size() < 2)
      return false;
    size_t next = 0;
    for (size_t d = 0; d + 2 < call->args.size(); ++d) {
      while (next < batch_dims && !is_var(call->args[d], func.pure_vars[next]))
        ++next;
      if (next == batch_dims)
        return false;
      ++next;
    }
    return true;
  };
  auto last_two = [&](const Call *call, const std::string &x, const std::string &y) {
    size_t n = call->args.size();
    return batch_args(call) && is_var(call->args[n - 2], x) && is_var(call->args[n - 1], y);
  };
  // A(i, k) or A(k, i): which of A's last two dimensions k indexes.
  auto a_k_dim = [&](const Call *call) {
    if (last_two(call, i, k))
      return 1;
    if (last_two(call, k, i))
      return 0;
    return -1;
  };
  auto is_a = [&](const Call *call) { return a_k_dim(call) >= 0; };
  // B(k, j) or W(j, k): which of B's last two dimensions k indexes.
  auto b_k_dim = [&](const Call *call) {
    if (last_two(call, k, j))
      return 0;
    if (last_two(call, j, k))
      return 1;
    return -1;
  };
  auto is_b = [&](const Call *call) { return b_k_dim(call) >= 0; };
  if (!(is_a(x) && is_b(y)) && !(is_a(y) && is_b(x)))
    reject(str_cat("does not read its inputs as A(", i, ", ", k, ") or A(", k, ", ", i, ") and B(", k, ", ", j,
                   ") or W(", j, ", ", k, ")"));
  const Call *a = is_a(x) && is_b(y) ? x : y, *b = a == x ? y : x;
  for (const Call *operand : {a, b}) {
    if (operand->type != operand_type(kind))
      user_error(c.where(), mma_kind_name(kind), " multiplies ", operand_type(kind), " values, but input '",
                 operand->name, "' is ", operand->type, "; declare it as ", operand_type(kind),
                 " or choose the instruction for ", operand->type,
                 operand->type == Float(32)  ? " (tf32 m16n8k8, which rounds the inputs to tf32)"
                 : operand->type.is_fp8() ? str_cat(" (", operand->type, " wgmma, a warpgroup MMA)")
                                          : "");
  }
  // The 8-bit instructions read A and B K-major, and no copy of ours
  // transposes 8-bit elements: A must be stored M x K, B N x K, as FP8
  // activations and weights are.
  if (operand_type(kind).is_fp8() && a_k_dim(a) != 1)
    user_error(c.where(), mma_kind_name(kind), " reads both operands K-major, but '", a->name, "' is read as ", a->name,
               "(", k, ", ", i, "), stored K x M; store it M x K and read it as ", a->name, "(", i, ", ", k, ")");
  if (operand_type(kind).is_fp8() && b_k_dim(b) != 1)
    user_error(c.where(), mma_kind_name(kind), " reads both operands K-major, but '", b->name, "' is read as ",
               b->name, "(", k, ", ", j, "), stored K x N; store it N x K and read it as ", b->name, "(", j, ", ", k,
               ") (nn.Linear's weight layout)");
  MmaOperands operands{a->name, b->name, b_k_dim(b)};
  operands.a_k_dim = a_k_dim(a);
  // The instruction's rows and columns are out's last two dimensions; the
  // batch ones are loops outside the tile.
  const MmaLayout &layout = func.schedule.stages[c.s].mma_layout;
  const int first = static_cast<int>(batch_dims);
  if (std::min(layout.rows_dim, layout.columns_dim) != first ||
      std::max(layout.rows_dim, layout.columns_dim) != first + 1)
    user_error(c.where(), "mma_tile lays the instruction's rows and columns along '",
               func.pure_vars[static_cast<size_t>(layout.rows_dim)], "' and '",
               func.pure_vars[static_cast<size_t>(layout.columns_dim)],
               "', but they must be the last two dimensions, '", i, "' and '", j,
               "': the dimensions before them are a batch, a loop outside the tile");
  operands.batch_dims = first;
  operands.a_rank = static_cast<int>(a->args.size());
  operands.b_rank = static_cast<int>(b->args.size());
  operands.rows_along_j = func.schedule.stages[c.s].mma_layout.rows_dim == static_cast<int>(batch_dims) + 1;
  if (operands.rows_along_j) {
    if (operand_type(kind).bits != 16)
      user_error(c.where(), "the tile's rows run along ", j, " (swap-AB), which has run on a GPU with 16-bit ",
                 "operands (bf16, f16) only; ", mma_kind_name(kind), " with its rows along ", j,
                 " is unverified: lay the tile's rows along ", i);
    // Swap-AB: B is the instruction's first operand. The warpgroup MMA
    // reads it either way (its transpose flag for a B stored K x N); the
    // warp MMA's fragments of its first operand run along k.
    if (!operands.b_k_contiguous() && !is_warpgroup_mma(kind))
      user_error(c.where(), "the tile's rows run along ", j, " (mma_tile's first loop walks ", j,
                 "), so B's rows fill ", mma_kind_name(kind),
                 "'s M, whose fragments run along k: B must be stored N x K, read as ", b->name, "(", j, ", ", k,
                 ") (nn.Linear's weight layout); '", b->name, "' is read as ", b->name, "(", k, ", ", j,
                 "), stored K x N: store it N x K, use a warpgroup MMA (sm_90a), or lay the tile's rows along ", i);
  }
  return operands;
}

void check_loops(const Context &c, const MmaLayout &layout, const MmaRequest &request) {
  const StageSchedule &stage = c.func.schedule.stages[c.s];
  const std::vector<Dim> &dims = stage.dims;
  std::vector<std::string> tail = {layout.frag_i, layout.frag_j, request.k_inner};
  bool intact = dims.size() >= tail.size();
  for (size_t n = 0; intact && n < tail.size(); ++n)
    intact = dims[dims.size() - tail.size() + n].var == tail[n];
  if (!intact)
    user_error(c.where(), "the loops '", tail[0], "', '", tail[1], "' and '", tail[2],
               "' must stay the innermost, in this order: one instruction computes them together; do not reorder "
               "them after mma()");
  auto find = [&](const std::string &name) {
    return std::find_if(dims.begin(), dims.end(), [&](const Dim &d) { return d.var == name; });
  };
  auto lane = find(layout.lane), warp = find(layout.warp);
  if (lane == dims.end() || warp == dims.end() || lane->kind != ForKind::GpuThread || lane->gpu_dim != 0 ||
      warp->kind != ForKind::GpuThread || warp->gpu_dim != 1 || lane > find(layout.frag_i))
    user_error(c.where(), "the loops '", layout.lane, "' (GPU thread x) and '", layout.warp,
               "' (GPU thread y) that mma_tile made must stay mapped as it mapped them, outside the instruction's "
               "loops: the fragment layout depends on which lane holds which element");
  if (!c.func.schedule.stages[c.s].allow_reassociation)
    user_error(c.where(), "a ", mma_kind_name(request.kind), " instruction sums the products of each k step in its "
               "own order, which changes the floating-point result; call ", c.func.name, ".update(", c.s - 1,
               ").allow_reassociation() to accept that");
}

// The consumer the fragment layout came from must still have it, with the
// same loops, and this Func must be computed on its tile above the warps.
void check_consumer(const Context &c, const MmaLayout &layout) {
  const FuncSchedule &schedule = c.func.schedule;
  const FuncContents *consumer =
      schedule.placement == Placement::At ? c.env.find(schedule.at_func) : nullptr;
  const MmaLayout *theirs = consumer ? &consumer->schedule.stages.front().mma_layout : nullptr;
  if (!theirs || theirs->kind != layout.kind || theirs->warp != layout.warp || theirs->lane != layout.lane ||
      theirs->frag_i != layout.frag_i || theirs->frag_j != layout.frag_j || theirs->mma_i != layout.mma_i ||
      theirs->mma_j != layout.mma_j)
    user_error(c.where(), "'", c.func.name, "' must be computed (fuse_epilogue) on the tile of the consumer whose "
               "mma_tile made its loops, and stay there; it is ",
               consumer ? str_cat("computed at '", consumer->name, "', whose tile has no matching mma_tile")
                        : std::string("not computed at a consumer's loop"));
}

// The domain of the reduction variable `name` as the update wrote it.
bool reduction_domain(const Expr &value, const std::string &name, Expr *min, Expr *extent) {
  struct Find : IRVisitor {
    const std::string &name;
    Expr min, extent;
    explicit Find(const std::string &n) : name(n) {}
    using IRVisitor::visit;
    void visit(const Variable *op) override {
      if (op->variable_kind == VariableKind::Reduction && op->name == name && !min.defined()) {
        min = op->reduction_min;
        extent = op->reduction_extent;
      }
    }
  } find(name);
  find.visit_expr(value);
  *min = find.min;
  *extent = find.extent;
  return min->defined();
}

// A K that the k step may not divide leaves a last step that overhangs the
// reduction; an instruction cannot skip its elements, so they must read as
// 0. zero_fill makes them 0 past the input's end, so the input must end
// along k where the reduction does: an A of K + 8 columns under a reduction
// over [0, K) would add columns K .. K + 7 in the last step.
void check_ragged_reduction(const Context &c, const MmaOperands &operands) {
  const StageSchedule &stage = c.func.schedule.stages[c.s];
  const Split *steps = stage.reduction_split();
  int k_step = steps ? steps->factor : 0;
  Expr min, extent;
  if (!steps || !reduction_domain(c.func.updates[c.s - 1].value, steps->old_var, &min, &extent))
    return; // check_mma's other rules refuse a stage without its k split
  auto constant = as_const_int(simplify(extent));
  if (constant && k_step && *constant % k_step == 0)
    return;
  Expr end = simplify(min + extent);
  for (const auto &[input, dim] :
       {std::make_pair(operands.a, operands.a_k_dimension()), std::make_pair(operands.b, operands.b_k_dimension())}) {
    auto found = c.env.inputs.find(input);
    if (found == c.env.inputs.end())
      continue;
    const Expr &input_extent = found->second->extents[static_cast<size_t>(dim)];
    if (!equal(simplify(input_extent), end))
      user_error(c.where(), "the reduction runs over ", steps->old_var, " in [", to_string(simplify(min)), ", ",
                 to_string(end), "), whose extent ", to_string(simplify(extent)),
                 " may not be a multiple of the k step ", k_step, ", so the last step reads past its end, and "
                 "those elements read as 0 only past the input's; '", input, "' extends to ",
                 to_string(input_extent), " along k (dimension ", dim, "): give it the reduction's extent there, "
                 "or a reduction that ends where it does");
  }
  for (const std::string &input : {operands.a, operands.b}) {
    auto staged = std::find_if(stage.staged_inputs.begin(), stage.staged_inputs.end(),
                               [&](const SharedStaging &s) { return s.input == input; });
    if (staged == stage.staged_inputs.end() || !zero_fills(staged->copies))
      user_error(c.where(), "the reduction's extent ", to_string(extent), " may not be a multiple of the k step ",
                 k_step, ", and an instruction cannot skip the elements past its end; stage '", input,
                 "' in shared memory with zero_fill copies (or the TMA's), so they read as 0");
  }
}

// A warpgroup MMA reads both operands from shared memory through matrix
// descriptors, in the 128-byte swizzled layout stage_in_shared gives their
// tiles: so both must be staged at the k step's loop, in that layout (no
// padding or transposition, which would move elements the descriptor
// locates by position; the compiler itself stores tf32's B transposed).
void check_warpgroup_staging(const Context &c, const MmaOperands &operands) {
  const StageSchedule &stage = c.func.schedule.stages[c.s];
  // The second operand's tile: an MN-major one is read in swizzled atoms
  // of 64 columns; a K-major one in rows of k, 8 at a time, and narrower
  // than 64 columns only with 16-bit operands so far.
  const int columns = stage.mma_layout.warp_n;
  const bool column_operand_k_major = column_operand_staged_k_major(stage.mma.kind, operands);
  if (columns % 64 && (!column_operand_k_major || mma_instruction(stage.mma.kind).operand.bits != 16))
    user_error(c.where(), "a warpgroup tile of 64 x ", columns, " for ", mma_kind_name(stage.mma.kind), ": ",
               !column_operand_k_major
                   ? str_cat("'", operands.column_operand(), "' is read with its rows along k (stored ",
                             operands.column_operand() == operands.a ? "K x M" : "K x N", "), in ",
                             "swizzled atoms of 64 columns, so N must be a multiple of 64")
                   : str_cat("N narrower than a multiple of 64 takes 16-bit operands (bf16, f16)"),
               "; give mma_tile a multiple of 64");
  const Split *steps = stage.reduction_split();
  std::string k_outer = steps ? steps->outer : std::string();
  for (const std::string &input : {operands.a, operands.b}) {
    auto staged = std::find_if(stage.staged_inputs.begin(), stage.staged_inputs.end(),
                               [&](const SharedStaging &s) { return s.input == input; });
    if (staged == stage.staged_inputs.end() || staged->at_loop != k_outer)
      user_error(c.where(), mma_kind_name(stage.mma.kind), " reads A and B from shared memory, one k step at a time; "
                 "stage '", input, "' in shared memory at '", k_outer, "' (stage_in_shared(", input, ", ", k_outer,
                 ", layout, copies))", staged == stage.staged_inputs.end() ? std::string()
                                                                  : str_cat(", not at '", staged->at_loop, "'"));
    if (staged->layout.padding || staged->layout.transposed)
      user_error(c.where(), mma_kind_name(stage.mma.kind),
                 " finds its operands in shared memory by the 128-byte "
                 "swizzled layout the compiler gives their tiles; staging '",
                 input, "' with ",
                 staged->layout.padding ? str_cat("padding ", staged->layout.padding) : std::string("transposition"),
                 " would move them: leave SharedLayout's padding at 0 and transposed false",
                 mma_staged_transposed(stage.mma.kind, operands, input)
                     ? str_cat(" (the compiler stores ", input, " K-major itself)")
                     : "");
  }
}

} // namespace

bool mma_staged_transposed(MmaKind kind, const MmaOperands &operands, const std::string &input) {
  // The instruction table's major for B holds for A too: only the 16-bit
  // warpgroup MMAs have the transpose flags that read an operand MN-major.
  if (!warpgroup_mma_reads_b_k_major(kind))
    return false;
  return (input == operands.b && !operands.b_k_contiguous()) || (input == operands.a && !operands.a_k_contiguous());
}

namespace {

// Whether `input` (A or B) lies K-major in shared memory: stored with k
// contiguous, or transposed by the compiler while staging.
bool staged_k_major(MmaKind kind, const MmaOperands &operands, const std::string &input) {
  const bool k_contiguous = input == operands.a ? operands.a_k_contiguous() : operands.b_k_contiguous();
  return k_contiguous || mma_staged_transposed(kind, operands, input);
}

} // namespace

bool row_operand_staged_k_major(MmaKind kind, const MmaOperands &operands) {
  return staged_k_major(kind, operands, operands.row_operand());
}

bool column_operand_staged_k_major(MmaKind kind, const MmaOperands &operands) {
  return staged_k_major(kind, operands, operands.column_operand());
}

MmaOperands mma_operands(const FuncContents &func, size_t stage) {
  Environment unused;
  Context c{unused, func, stage};
  return match_update(c, func.schedule.stages[stage].mma.kind);
}

void check_mma(const Environment &env) {
  for (const FuncContents &func : env.funcs)
    for (size_t s = 1; s < func.schedule.stages.size(); ++s) {
      const StageSchedule &stage = func.schedule.stages[s];
      if (stage.mma.kind == MmaKind::None)
        continue;
      Context c{env, func, s};
      MmaOperands operands = match_update(c, stage.mma.kind);
      check_consumer(c, stage.mma_layout);
      check_loops(c, stage.mma_layout, stage.mma);
      if (is_warpgroup_mma(stage.mma.kind))
        check_warpgroup_staging(c, operands);
      check_ragged_reduction(c, operands);
    }
}

} // namespace coalesce
