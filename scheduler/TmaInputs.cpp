#include "scheduler/TmaInputs.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/Input.h"
#include "scheduler/LoopNames.h"
#include "scheduler/MmaOperands.h"
#include "scheduler/Simplify.h"

#include <algorithm>
#include <map>

namespace coalesce {

std::vector<TmaInputCopy> tma_input_copies(const Environment &env) {
  std::map<std::string, TmaInputCopy> copies;
  std::map<std::string, std::string> first_stage;
  for (const FuncContents &func : env.funcs)
    for (size_t s = 0; s < func.schedule.stages.size(); ++s) {
      const StageSchedule &stage = func.schedule.stages[s];
      for (const SharedStaging &staged : stage.staged_inputs) {
        const TmaCopies *tma = tma_copies(staged.copies);
        if (!tma || tma->padded_copy == PaddedCopy::Never)
          continue;
        auto found = env.inputs.find(staged.input);
        COALESCE_INTERNAL_ASSERT(found != env.inputs.end(), "staged input '", staged.input,
                                 "' is no input of the pipeline");
        TmaInputCopy copy;
        copy.input = found->second.get();
        copy.only_where_ragged = tma->padded_copy == PaddedCopy::WhereRowsAreRagged;
        // check_mma made sure the TMA feeds only warpgroup MMAs.
        if (is_warpgroup_mma(stage.mma.kind)) {
          copy.round_to_tf32 = mma_rounds_to_tf32(stage.mma.kind);
          copy.transposed = mma_staged_transposed(stage.mma.kind, mma_operands(func, s), staged.input);
        }
        // Made only where the rows are ragged, of rows known not to be:
        // never made (the TMA reads the input).
        if (copy.only_where_ragged && is_const(simplify(tma_describable(*copy.input)), 1))
          continue;
        std::string where = stage_description(func, s);
        auto [known, inserted] = copies.emplace(staged.input, copy);
        if (inserted) {
          first_stage[staged.input] = where;
          continue;
        }
        // One workspace per input: every stage must want the same copy.
        if (known->second.transposed != copy.transposed || known->second.round_to_tf32 != copy.round_to_tf32 ||
            known->second.only_where_ragged != copy.only_where_ragged) {
          auto describe = [](const TmaInputCopy &c) {
            return str_cat(c.transposed ? "transposed" : "as it lies", c.round_to_tf32 ? " and rounded to tf32" : "",
                           c.only_where_ragged ? " where its rows are ragged (PaddedCopy::WhereRowsAreRagged)"
                                               : " on every launch (PaddedCopy::Always)");
          };
          user_error("in schedule for ", where, ": '", staged.input,
                     "' is staged with a TmaCopies::padded_copy, "
                     "so it is copied once, into one workspace, for every stage that reads it; ",
                     first_stage[staged.input], " needs that copy ", describe(known->second), ", this stage ",
                     describe(copy), ": stage them with the same copy, or with PaddedCopy::Never in one of them");
        }
      }
    }
  std::vector<TmaInputCopy> result;
  for (const auto &[name, copy] : copies)
    result.push_back(copy);
  return result;
}

std::optional<TmaInputCopy> find_tma_input_copy(const Environment &env, const std::string &input) {
  for (const TmaInputCopy &copy : tma_input_copies(env))
    if (copy.input->name == input)
      return copy;
  return std::nullopt;
}

TmaInputCopy tma_input_copy(const Environment &env, const std::string &input) {
  if (std::optional<TmaInputCopy> copy = find_tma_input_copy(env, input))
    return *copy;
  internal_error("input '", input, "' has no copy for the TMA");
}

std::vector<Expr> tma_copy_extents(const TmaInputCopy &copy) {
  std::vector<Expr> extents = copy.input->extents;
  if (copy.transposed)
    std::reverse(extents.begin(), extents.end());
  int per_row = kTmaCopyRowBytes / copy.input->type.bytes();
  extents.back() = simplify((extents.back() + (per_row - 1)) / per_row * per_row);
  // No rows where the input's own are whole 16-byte multiples: the copy is
  // not made, and the TMA reads the input.
  if (copy.only_where_ragged)
    extents.front() = simplify(select(tma_describable(*copy.input), Expr(0), extents.front()));
  return extents;
}

std::vector<Argument> tma_padded_workspaces(const Environment &env) {
  std::vector<Argument> workspaces;
  for (const TmaInputCopy &copy : tma_input_copies(env)) {
    Argument padded{
        tma_padded_name(copy.input->name), Argument::Kind::Buffer, copy.input->type, tma_copy_extents(copy), false, {}};
    padded.is_workspace = true;
    workspaces.push_back(padded);
  }
  return workspaces;
}

Expr tma_describable(Type type, const std::vector<Expr> &extents) {
  int per_row = 16 / type.bytes();
  return extents.back() % per_row == 0;
}

Expr tma_describable(const InputContents &input) { return rows_start_at_multiples(input, 16 / input.type.bytes()); }

} // namespace coalesce
