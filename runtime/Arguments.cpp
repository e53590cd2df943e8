#include "runtime/Arguments.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IROperator.h"
#include "dsl/Limits.h"
#include "scheduler/EvaluateInt.h"
#include "scheduler/InputReads.h"

#include <algorithm>
#include <cstdint>

namespace coalesce {

namespace {
std::string shape_text(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? " x " : "") + std::to_string(shape[d]);
  return text;
}

// How a user spells `type` in C++.
std::string type_constructor(Type type) {
  if (type == BFloat(16))
    return "BFloat(16)";
  if (type == Float(16))
    return "Float(16)";
  if (type == Float(32))
    return "Float(32)";
  if (type == Float8E4M3())
    return "Float8E4M3()";
  if (type == Float8E5M2())
    return "Float8E5M2()";
  return type.str();
}

std::string extents_text(const std::vector<Expr> &extents) {
  std::string text;
  for (size_t d = 0; d < extents.size(); ++d)
    text += (d ? " x " : "") + to_string(extents[d]);
  return text;
}

// A view (an Input's strides, or the output's): the buffer passed for it,
// of any shape, must hold every element the view reaches, 1 + sum of
// (extent - 1) * stride (nothing when an extent is 0), within the 32-bit
// indexing. Returns the strides' values.
std::vector<int64_t> check_view(const Argument &arg, const Buffer &buffer, const std::vector<int64_t> &extents,
                                const std::map<std::string, int64_t> &params) {
  int64_t last = 0;
  bool empty = false;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < extents.size(); ++d) {
    int64_t stride = evaluate_int(arg.strides[d], params);
    strides.push_back(stride);
    if (stride < 1 || stride > kMaxExtent)
      user_error(arg.is_output ? "output '" : "input '", arg.name, "' is a view with stride ", stride, " (",
                 to_string(arg.strides[d]), ") in dimension ", d, "; strides are 1 to ", kMaxExtentText);
    empty |= extents[d] == 0;
    last += (extents[d] - 1) * stride; // at most 5 * 2^30 * 2^30: no wrap in 64 bits
  }
  if (empty)
    return strides;
  if (last + 1 > kMaxExtent)
    user_error(arg.is_output ? "output '" : "input '", arg.name, "' is a view that reaches element ", last,
               " of its buffer; a buffer holds at most ", kMaxExtentText,
               " elements, since the generated code indexes in 32 bits");
  if (static_cast<int64_t>(buffer.size()) < last + 1) {
    std::string text;
    for (size_t d = 0; d < arg.strides.size(); ++d)
      text += (d ? " x " : "") + to_string(arg.strides[d]);
    user_error(arg.is_output ? "output" : "input", " buffer '", arg.name, "' holds ", buffer.size(),
               " elements, but the view (extents ", extents_text(arg.extents), ", strides ", text, ") reaches element ",
               last, ": pass the buffer it is a view into");
  }
  return strides;
}

// An output view whose elements overlap (rows ldc < N apart) stores two of
// its elements at one address, and which store lands last is the
// schedule's choice: the result would depend on the schedule. Each stride,
// taken in increasing order, must step past everything the dimensions with
// smaller strides span, 1 + the sum of their (extent - 1) * stride; that
// proves the elements distinct (it refuses some interleaved views whose
// elements happen not to meet). Dimensions of one element step nowhere.
void check_output_view_distinct(const Argument &arg, const std::vector<int64_t> &extents,
                                const std::vector<int64_t> &strides) {
  if (std::find(extents.begin(), extents.end(), 0) != extents.end())
    return;
  std::vector<size_t> order;
  for (size_t d = 0; d < extents.size(); ++d)
    if (extents[d] > 1)
      order.push_back(d);
  auto stride = [&](size_t d) { return strides[d]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return stride(a) < stride(b); });
  int64_t span = 1; // the elements the dimensions so far reach, from the first
  for (size_t n = 0; n < order.size(); ++n) {
    const size_t d = order[n];
    if (n > 0 && stride(d) < span)
      user_error("output '", arg.name, "' is a view whose elements overlap: its stride ", stride(d), " (",
                 to_string(arg.strides[d]), ") in dimension ", d, " steps less than the ", span,
                 " elements the dimensions with smaller strides span (extents ", extents_text(arg.extents), " = ",
                 shape_text(extents),
                 "), so two of its elements would be stored at one address, and which lands "
                 "last would depend on the schedule; pass strides that step past each other (",
                 to_string(arg.strides[d]), " >= ", span, ")");
    span += (extents[d] - 1) * stride(d);
  }
}

// "K = -3" for each parameter `e` reads (with values), or "'K'" (without).
std::string params_text(const Expr &e, const std::map<std::string, int64_t> &params, bool values = true) {
  std::string text;
  for (const Variable *var : variables_of(e)) {
    auto it = params.find(var->name);
    if (it == params.end())
      continue;
    text += (text.empty() ? "" : ", ") +
            (values ? str_cat(var->name, " = ", it->second) : str_cat("parameter '", var->name, "'"));
  }
  return text.empty() ? std::string("the parameters") : text;
}

// The kernels read inputs while they write the output, in an order the
// schedule chooses; an output that shares memory with an input would be read
// after it was overwritten, differently for each schedule.
void check_output_overlaps_no_input(const std::vector<Argument> &args, const BoundArguments &bound,
                                    const Buffer &output) {
  auto begin = [](const Buffer &b) { return reinterpret_cast<std::uintptr_t>(b.raw_data()); };
  auto end = [&](const Buffer &b) { return begin(b) + b.size_in_bytes(); };
  std::string output_name;
  for (const Argument &arg : args)
    if (arg.is_output)
      output_name = arg.name;
  for (size_t a = 0; a < args.size(); ++a) {
    const Buffer *input = bound.inputs[a];
    if (!input || input->size() == 0 || output.size() == 0)
      continue;
    if (begin(*input) < end(output) && begin(output) < end(*input))
      user_error("the output buffer '", output_name, "' overlaps input buffer '", args[a].name,
                 "' in memory; the output is written while the inputs are read, so pass an output buffer "
                 "that shares no memory with any input");
  }
}

// The first definition that reads an input at these sizes (for messages).
std::string always_reading(const std::vector<InputRead> &reads, const std::map<std::string, int64_t> &params) {
  for (const InputRead &read : reads)
    if (!never_read({read}, params))
      return read.site;
  return "a definition";
}

} // namespace

int64_t workspace_elements(const Argument &arg, const std::map<std::string, int64_t> &params) {
  int64_t elements = 1;
  for (const Expr &extent : arg.extents) {
    elements *= std::max<int64_t>(evaluate_int(extent, params), 0);
    if (elements > kMaxExtent)
      user_error("the workspace '", arg.name, "' would have ", extents_text(arg.extents), " = ", elements,
                 " or more elements; a buffer holds at most ", kMaxExtentText,
                 " elements, since the generated code indexes in 32 bits: split the reduction into fewer slices");
  }
  return elements;
}

BoundArguments bind_arguments(const std::vector<Argument> &args, const Arguments &given, const Buffer &output) {
  BoundArguments bound;
  std::string expected;
  for (const Argument &arg : args)
    if (!arg.is_output && !arg.is_workspace)
      expected += (expected.empty() ? "" : ", ") + arg.name;
  for (const auto &[name, value] : given) {
    bool known = false;
    for (const Argument &arg : args) {
      known |= arg.name == name && !arg.is_output && !arg.is_workspace;
      if (arg.name == name && arg.is_output)
        user_error("'", name, "' is the pipeline's output; pass its buffer as the output argument of realize, "
                   "not among the inputs and parameters");
    }
    if (!known)
      user_error("unknown argument '", name, "'; the pipeline takes: ", expected);
  }
  for (const Argument &arg : args) {
    if (arg.is_buffer() || arg.is_output)
      continue;
    auto it = given.find(arg.name);
    if (it == given.end())
      user_error("missing parameter '", arg.name, "'");
    if (!it->second.is_scalar())
      user_error("parameter '", arg.name, "' must be an integer, not a buffer");
    bound.params[arg.name] = it->second.scalar();
  }
  // An empty output (M = 0 or N = 0) is an empty result: every buffer may
  // then be empty. A non-empty output may have an empty input only where
  // nothing reads it: every definition that reads it iterates over a
  // reduction range that is empty (K = 0: the sum adds nothing, acc keeps its
  // initial value and the epilogue runs on it, as cuBLAS and PyTorch do).
  bool output_empty = false;
  for (const Argument &arg : args)
    if (arg.is_output)
      for (const Expr &extent : arg.extents)
        output_empty |= evaluate_int(extent, bound.params) == 0;
  bound.output_empty = output_empty;
  for (const Argument &arg : args) {
    const Buffer *buffer = nullptr;
    if (arg.is_workspace) {
      // The runtime's own: sized here, never passed by the caller.
      bound.inputs.push_back(nullptr);
      bound.elements.push_back(static_cast<size_t>(workspace_elements(arg, bound.params)));
      bound.bytes.push_back(bound.elements.back() * static_cast<size_t>(arg.type.bytes()));
      continue;
    }
    if (arg.is_output) {
      buffer = &output;
    } else if (arg.is_buffer()) {
      auto it = given.find(arg.name);
      if (it == given.end())
        user_error("missing input buffer '", arg.name, "'");
      if (it->second.is_scalar())
        user_error("input '", arg.name, "' must be a buffer, not an integer");
      buffer = it->second.buffer();
    }
    bound.inputs.push_back(arg.is_output ? nullptr : buffer);
    if (!buffer) {
      bound.elements.push_back(0);
      bound.bytes.push_back(0);
      continue;
    }
    bool bufferable = arg.type == Float(32) || arg.type == BFloat(16) || arg.type == Float(16) || arg.type.is_fp8();
    if (!bufferable)
      user_error("buffer '", arg.name, "' is declared with element type ", arg.type,
                 ", which no Buffer holds; declare it as Float(32), BFloat(16), Float(16), Float8E4M3() or "
                 "Float8E5M2()");
    if (buffer->type() != arg.type)
      user_error(arg.is_output ? "output" : "input", " buffer '", arg.name, "' holds ", buffer->type(),
                 " elements but the pipeline declares '", arg.name, "' as ", arg.type,
                 (arg.is_output ? " (the type of the output Func's definition)" : " (the Input's type)"),
                 "; make it with Buffer(shape, ", type_constructor(arg.type), ")",
                 arg.is_output ? "" : " and fill it with set(), which rounds each value to that type");
    // The limit is checked on the sizes the parameters give, before the
    // buffer's own shape, and the element count in 64 bits, so that no
    // product can wrap on the way.
    std::vector<int64_t> needed;
    int64_t elements = 1;
    for (const Expr &extent : arg.extents) {
      int64_t value = evaluate_int(extent, bound.params);
      if (value < 0)
        user_error("buffer '", arg.name, "' would have extent ", value, " (", to_string(extent),
                   "); extents must be zero or positive");
      if (value == 0 && !output_empty && !never_read(arg.reads, bound.params))
        user_error("buffer '", arg.name, "' would have extent 0 (", to_string(extent), ") while the output is not "
                   "empty, and ", always_reading(arg.reads, bound.params), " reads it; an input may be empty only "
                   "where every definition that reads it runs over an empty reduction range (K = 0) or the output "
                   "is empty (M = 0 or N = 0)");
      if (value > kMaxExtent)
        user_error("buffer '", arg.name, "' would have extent ", value, " (", to_string(extent),
                   "); extents are at most ", kMaxExtentText, ", since the generated code indexes in 32 bits");
      elements *= value; // at most 2^30 * 2^30 before the check below
      if (elements > kMaxExtent)
        user_error("buffer '", arg.name, "' would have ", extents_text(arg.extents), " = ", elements,
                   needed.size() + 1 < arg.extents.size() ? " or more" : "", " elements; a buffer holds at most ",
                   kMaxExtentText, " elements, since the generated code indexes in 32 bits");
      needed.push_back(value);
    }
    if (!arg.strides.empty()) {
      const std::vector<int64_t> strides = check_view(arg, *buffer, needed, bound.params);
      if (arg.is_output)
        check_output_view_distinct(arg, needed, strides);
      bound.elements.push_back(buffer->size());
      bound.bytes.push_back(buffer->size_in_bytes());
      continue;
    }
    std::vector<int64_t> actual(buffer->shape().begin(), buffer->shape().end());
    if (actual != needed)
      // A Buffer made without a shape has none to print ("has shape  but").
      user_error(arg.is_output ? "output" : "input", " buffer '", arg.name, "' has ",
                 actual.empty() ? std::string("no shape (a Buffer made without one)")
                                : "shape " + shape_text(actual),
                 " but the pipeline needs ", extents_text(arg.extents), " = ", shape_text(needed));
    bound.elements.push_back(buffer->size());
    bound.bytes.push_back(buffer->size_in_bytes());
  }
  // After the buffers, whose extents name a negative parameter first.
  // A reduction runs over [min, min + extent): a negative extent is no
  // range at all, and would otherwise sum nothing without a word.
  for (const Argument &arg : args)
    for (const InputRead &read : arg.reads)
      for (const Expr &extent : read.reduction_extents) {
        int64_t value = evaluate_int(extent, bound.params);
        if (value < 0)
          user_error("the reduction of ", read.site, " would run over ", value, " elements (", to_string(extent),
                     " with ", params_text(extent, bound.params),
                     "); a reduction's extent must be zero or positive: check the value of ",
                     params_text(extent, bound.params, false));
      }
  check_output_overlaps_no_input(args, bound, output);
  return bound;
}

} // namespace coalesce
