#include "scheduler/MmaOperands.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "scheduler/LoopNames.h"

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
// The stage being matched, for messages.
struct StageOf {
  const FuncContents &func;
  size_t s;
  std::string where() const { return str_cat("in schedule for ", stage_description(func, s), ": mma: "); }
};

// The update must be acc(i, j) + A(i, k) * B(k, j), with A stored M x K
// (A(i, k)) or K x M (A(k, i)) and B stored K x N (B(k, j)) or N x K
// (W(j, k)), in either order of the factors: the one computation an MMA
// instruction performs.
MmaOperands match_update(const StageOf &c, MmaKind kind) {
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
                 operand->type == Float(32) ? " (tf32 m16n8k8, which rounds the inputs to tf32)"
                 : operand->type.is_fp8()   ? str_cat(" (", operand->type, " wgmma, a warpgroup MMA)")
                                            : "");
  }
  // The 8-bit instructions read A and B K-major, and no copy of ours
  // transposes 8-bit elements: A must be stored M x K, B N x K, as FP8
  // activations and weights are.
  if (operand_type(kind).is_fp8() && a_k_dim(a) != 1)
    user_error(c.where(), mma_kind_name(kind), " reads both operands K-major, but '", a->name, "' is read as ", a->name,
               "(", k, ", ", i, "), stored K x M; store it M x K and read it as ", a->name, "(", i, ", ", k, ")");
  if (operand_type(kind).is_fp8() && b_k_dim(b) != 1)
    user_error(c.where(), mma_kind_name(kind), " reads both operands K-major, but '", b->name, "' is read as ", b->name,
               "(", k, ", ", j, "), stored K x N; store it N x K and read it as ", b->name, "(", j, ", ", k,
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

} // namespace

MmaOperands mma_operands(const FuncContents &func, size_t stage) {
  return match_update(StageOf{func, stage}, func.schedule.stages[stage].mma.kind);
}

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
int mma_groups_in_flight(bool warpgroup_mma, int stages) { return warpgroup_mma && stages >= 3 ? 1 : 0; }

} // namespace coalesce
