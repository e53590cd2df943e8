#include "scheduler/StagedTileRegion.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/Substitute.h"

#include <algorithm>
#include <regex>

namespace coalesce::staging {

Expr expand_lets(Expr e, const std::map<std::string, Expr> &lets, const std::function<void(const Expr &)> &each_form) {
  for (int depth = 0; depth < 16; ++depth) { // lets refer to lets a few levels deep
    if (each_form)
      each_form(e);
    Expr next = substitute(lets, e);
    if (next.same_as(e))
      break;
    e = next;
  }
  return e;
}

void FindCalls::visit(const Call *op) {
  IRVisitor::visit(op);
  if (op->call_type != CallType::Input || op->name != input_)
    return;
  std::vector<Expr> args;
  for (const Expr &arg : op->args)
    args.push_back(simplify(expand_lets(arg, lets_, [&](const Expr &form) {
      for (const std::string &name : ambiguous_)
        if (ambiguous_name.empty() && expr_uses_var(form, name))
          ambiguous_name = name;
    })));
  calls.push_back(args);
}

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
    // A loop variable, or quotients and remainders of it by constants (how a
    // fused loop's parts read it: lane / 4, warp % 2, warp % 8 / 4).
    std::vector<std::pair<bool, int64_t>> steps; // outermost first: (is a quotient, by)
    while (true) {
      if (const auto *div = var.as<Div>(); div && as_const_int(div->b) && *as_const_int(div->b) > 0) {
        steps.emplace_back(true, *as_const_int(div->b));
        var = div->a;
      } else if (const auto *mod = var.as<Mod>(); mod && as_const_int(mod->b) && *as_const_int(mod->b) > 0) {
        steps.emplace_back(false, *as_const_int(mod->b));
        var = mod->a;
      } else {
        break;
      }
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
    if (!min || !extent || (!steps.empty() && *min < 0))
      return false;
    // The values' range through the steps, innermost first.
    int64_t first = *min, last = *min + *extent - 1;
    for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
      const auto [quotient, by] = *step;
      if (quotient) {
        first /= by;
        last /= by;
      } else if (first / by == last / by) {
        first %= by;
        last %= by;
      } else {
        first = 0;
        last = by - 1;
      }
    }
    int64_t a = coefficient * first, b = coefficient * last;
    low += std::min(a, b);
    high += std::max(a, b);
  }
  *base = simplify(outer + static_cast<int>(low));
  *extent = high - low + 1;
  return true;
}

Expr ReplaceCalls::visit(const Call *op, const Expr &self) {
  Expr e = IRMutator::visit(op, self);
  const auto *call = e.as<Call>();
  if (call->call_type != CallType::Input || call->name != input_)
    return e;
  std::vector<Expr> indices;
  for (size_t d = 0; d < call->args.size(); ++d)
    indices.push_back(simplify(expand_lets(call->args[d], lets_) - region_.min[d]));
  return Load::make(call->type, buffer_, indices);
}

// An expression as the user wrote its names: "acc.s1.ko" reads "ko".
std::string readable(const Expr &e) {
  static const std::regex qualifier("[A-Za-z_][A-Za-z0-9_]*\\.s[0-9]+\\.");
  return std::regex_replace(to_string(e), qualifier, "");
}

StagedTile plan_staged_tile(const StagingSite &site, const SharedStaging &request, const For *op, const ScanBody &scan,
                            const Environment &env) {
  StagedTile tile;
  tile.input = env.inputs.at(request.input).get();
  tile.layout = request.layout;
  tile.copies = request.copies;
  tile.buffer = staging_buffer_name(request.input);
  FindCalls finder(request.input, scan.lets, scan.ambiguous);
  finder.visit_stmt(op->body);
  std::string short_loop = loop_short_name(site.loop);
  if (!finder.ambiguous_name.empty())
    user_error("in schedule for ", site.stage, ": cannot stage '", request.input, "' in shared memory at '", short_loop,
               "': its coordinates depend on '", loop_short_name(finder.ambiguous_name),
               "', which names loops or values of different ranges inside '", short_loop,
               "' (a split whose factor does not divide the loop, with bounds known only at run time); split by a "
               "factor that divides it");

  for (size_t d = 0; d < tile.input->extents.size(); ++d) {
    Expr base;
    int64_t extent = 0;
    for (const auto &call : finder.calls) {
      Expr call_base;
      int64_t call_extent;
      if (!affine_span(call[d], scan.loops, &call_base, &call_extent))
        user_error("in schedule for ", site.stage, ": cannot stage '", request.input, "' in shared memory at '",
                   short_loop, "': its coordinate ", readable(call[d]),
                   " is not an affine function of the loops inside '", short_loop, "' with constant coefficients");
      if (base.defined() && !is_const(simplify(base - call_base), 0))
        user_error("in schedule for ", site.stage, ": cannot stage '", request.input, "' in shared memory at '",
                   short_loop, "': it is read at tiles that start at different places (", readable(base), " and ",
                   readable(call_base), ")");
      base = call_base;
      extent = std::max(extent, call_extent);
    }
    tile.region.min.push_back(base);
    tile.region.extent.push_back(extent);
    tile.elements *= extent;
  }
  for (size_t d = 0; d < tile.input->extents.size(); ++d)
    tile.order.push_back(static_cast<int>(d));
  // Transposed: the last two dimensions swap (a batch's index before them
  // is one point per tile).
  if (tile.layout.transposed)
    std::swap(tile.order[tile.order.size() - 2], tile.order.back());
  for (int d : tile.order)
    tile.shared_extents.push_back(tile.region.extent[d]);
  tile.shared_extents.back() += tile.layout.padding;
  if (site.warpgroup_mma()) {
    // check_mma made sure the tile can be swizzled: 2-D, of the
    // instruction's operand type (16-bit, f32 for tf32, 8-bit), rows of whole atoms, no padding or transposition. A B
    // that the instruction reads K-major but that is stored K x N is
    // stored transposed: its rows run along n. An N x K one (W(j, k))
    // is staged as it lies, K-major, like A.
    const std::vector<int64_t> &extent = tile.region.extent;
    tile.swizzled = true;
    bool transposed = std::any_of(site.mma_operands.begin(), site.mma_operands.end(), [&](const MmaOperands &operands) {
      return mma_staged_transposed(site.mma_kind, operands, request.input);
    });
    const int first = static_cast<int>(extent.size()) - 2;
    tile.swizzle_row_dim = first + (transposed ? 1 : 0);
    tile.swizzle_column_dim = first + (transposed ? 0 : 1);
    tile.round_to_tf32 = mma_rounds_to_tf32(site.mma_kind);
    int bytes = tile.input->type.bytes(), rows = tile.swizzle_row_dim, columns = tile.swizzle_column_dim;
    bool batch_of_one = first >= 0 && std::all_of(extent.begin(), extent.begin() + std::max(first, 0),
                                                  [](int64_t e) { return e == 1; });
    COALESCE_INTERNAL_ASSERT(batch_of_one && bytes == mma_instruction(site.mma_kind).operand.bytes() &&
                                 extent[columns] % tile.swizzle_row() == 0 && extent[rows] % 8 == 0 &&
                                 !tile.layout.padding && !tile.layout.transposed,
                             "tile of '", request.input, "' cannot be swizzled for a warpgroup MMA");
    tile.shared_extents = {extent[columns] / tile.swizzle_row(), extent[rows], tile.swizzle_row()};
  }
  return tile;
}

namespace {

// Loads of a staged buffer come out of ReplaceCalls in input order.
class PermuteLoads : public IRMutator {
public:
  PermuteLoads(const StagedTile &tile, const Expr &which) : tile_(tile), which_(which) {}

private:
  using IRMutator::visit;
  Expr visit(const Load *op, const Expr &self) override {
    if (op->buffer != tile_.buffer)
      return IRMutator::visit(op, self);
    return Load::make(op->type, op->buffer, shared_indices(tile_, op->indices, which_));
  }
  const StagedTile &tile_;
  const Expr &which_;
};

} // namespace

Stmt read_from_tiles(const Stmt &body, const std::vector<StagedTile> &tiles, const ScanBody &scan, const Expr &slot) {
  Stmt result = body;
  for (const StagedTile &tile : tiles) {
    ReplaceCalls replace(tile.input->name, tile.buffer, tile.region, scan.lets);
    result = PermuteLoads(tile, slot).mutate(replace.mutate(result));
  }
  return result;
}

} // namespace coalesce::staging
