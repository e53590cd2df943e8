#include "dsl/Input.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/Var.h"

namespace coalesce {

Input::Input(std::string name, Type type, std::vector<Expr> extents) {
  check_identifier(name, "Input");
  if (type != Float(32) && type != Float(16) && type != BFloat(16) && !type.is_fp8() && type != Int(32))
    user_error("Input '", name, "' has element type ", type,
               "; an input holds Float(32), Float(16) (IEEE half), BFloat(16), Float8E4M3(), Float8E5M2() or Int(32) "
               "elements");
  if (extents.empty())
    user_error("Input '", name, "' needs at least one extent");
  for (size_t d = 0; d < extents.size(); ++d) {
    if (!extents[d].defined() || extents[d].type() != Int(32))
      user_error("Input '", name, "': extent ", d, " must be an i32 expression (an int or a Param)");
    if (auto value = extents[d].as<IntImm>(); value && value->value <= 0)
      user_error("Input '", name, "': extent ", d, " is ", value->value, "; extents must be positive");
  }
  contents_ = std::make_shared<const InputContents>(InputContents{std::move(name), type, std::move(extents), {}});
}

void check_view_strides(const std::string &what, size_t dimensions, const std::vector<Expr> &strides,
                        ViewOrders orders) {
  if (strides.size() != dimensions)
    user_error(what, " has ", dimensions, " dimensions but ", strides.size(),
               " strides; give one stride per dimension, outermost first");
  auto is_one = [&](size_t d) {
    auto value = strides[d].as<IntImm>();
    return value && value->value == 1;
  };
  for (size_t d = 0; d < strides.size(); ++d) {
    if (!strides[d].defined() || strides[d].type() != Int(32))
      user_error(what, ": stride ", d, " must be an i32 expression (an int or a Param)");
    auto value = strides[d].as<IntImm>();
    if (value && value->value < 1)
      user_error(what, ": stride ", d, " is ", value->value, "; strides must be at least 1");
  }
  const size_t last = strides.size() - 1;
  if (is_one(last))
    return;
  if (orders == ViewOrders::RowMajor)
    user_error(what, ": the innermost stride is ", to_string(strides[last]),
               "; the innermost dimension must be contiguous (stride 1): for a column-major tensor, declare its "
               "extents the other way round and swap the coordinates where it is read");
  if (strides.size() < 2 || !is_one(last - 1))
    user_error(what, ": the innermost stride is ", to_string(strides[last]),
               strides.size() < 2 ? std::string()
                                  : str_cat(" and the next-to-innermost ", to_string(strides[last - 1])),
               "; an output is stored row-major (the innermost stride 1: output_strides({ldc, 1})) or column-major "
               "(the next-to-innermost stride 1: output_strides({1, ldc}), out(i, j) at i + j * ldc)");
}

size_t contiguous_dimension(const std::vector<Expr> &strides) {
  if (strides.size() >= 2) {
    auto innermost = strides.back().as<IntImm>();
    if (!innermost || innermost->value != 1)
      return strides.size() - 2;
  }
  return strides.empty() ? 0 : strides.size() - 1;
}

Input::Input(std::string name, Type type, std::vector<Expr> extents, std::vector<Expr> strides)
    : Input(name, type, extents) {
  check_view_strides(str_cat("Input '", name, "'"), extents.size(), strides);
  contents_ = std::make_shared<const InputContents>(
      InputContents{std::move(name), type, std::move(extents), std::move(strides)});
}

Expr strides_are_multiples(const std::vector<Expr> &strides, int elements) {
  const size_t contiguous = contiguous_dimension(strides);
  Expr all; // the other strides' tests, joined
  for (size_t d = 0; d < strides.size(); ++d) {
    if (d == contiguous)
      continue;
    Expr whole = strides[d] % elements == 0;
    all = all.defined() ? (all && whole) : whole;
  }
  return all.defined() ? all : make_const(Bool(), 1);
}

Expr rows_start_at_multiples(const InputContents &input, int elements) {
  if (input.strides.empty())
    return input.extents.back() % elements == 0;
  return strides_are_multiples(input.strides, elements);
}

Expr Input::operator()(std::vector<Expr> args) const {
  if (args.size() != contents_->extents.size())
    user_error("Input '", name(), "' has ", contents_->extents.size(), " dimensions but is called with ",
               args.size(), " coordinates");
  for (const Expr &arg : args)
    if (!arg.defined() || arg.type() != Int(32))
      user_error("Input '", name(), "' is indexed by ", arg.defined() ? to_string(arg) : "nothing",
                 ", which is not an i32 coordinate");
  return Call::make(contents_->type, name(), std::move(args), CallType::Input, nullptr, contents_);
}

} // namespace coalesce
