#include "scheduler/CheckMma.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"

#include <algorithm>

namespace coalesce {

namespace {

struct Context {
  const Environment &env;
  const FuncContents &func;
  size_t s;
  std::string where() const { return str_cat("in schedule for ", stage_description(func, s), ": mma: "); }
};

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
    // The TMA copies boxes as they lie: an operand the instruction reads
    // K-major but stored with its rows along k reaches the tile only
    // through a copy that transposes it first (the rounding tf32 kind
    // copies both operands anyway: check_staging).
    const TmaCopies *tma = tma_copies(staged->copies);
    if (tma && tma->padded_copy != PaddedCopy::Always && mma_staged_transposed(stage.mma.kind, operands, input))
      user_error(c.where(), mma_kind_name(stage.mma.kind), " reads '", input, "' K-major, but it is stored ",
                 input == operands.a ? "K x M" : "K x N", " and '", input, "' is staged with TmaCopies",
                 tma->padded_copy == PaddedCopy::WhereRowsAreRagged
                     ? " copied first only where its rows are ragged (PaddedCopy::WhereRowsAreRagged)"
                     : "",
                 ", which copy boxes as they lie; set TmaCopies::padded_copy to PaddedCopy::Always (a "
                 "kernel of its own first copies '",
                 input, "' transposed, for the TMA to read), store it ", input == operands.a ? "M x K" : "N x K",
                 ", or use AsyncCopies");
  }
}

} // namespace

void check_mma(const Environment &env) {
  for (const FuncContents &func : env.funcs)
    for (size_t s = 1; s < func.schedule.stages.size(); ++s) {
      const StageSchedule &stage = func.schedule.stages[s];
      if (stage.mma.kind == MmaKind::None)
        continue;
      Context c{env, func, s};
      MmaOperands operands = mma_operands(func, s);
      check_consumer(c, stage.mma_layout);
      check_loops(c, stage.mma_layout, stage.mma);
      if (is_warpgroup_mma(stage.mma.kind))
        check_warpgroup_staging(c, operands);
      check_ragged_reduction(c, operands);
    }
}

} // namespace coalesce
