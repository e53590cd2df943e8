#pragma once
// An input buffer of an algorithm: a name, an element type and symbolic
// extents. Row-major: the last dimension is contiguous. Dense by default;
// with strides, a view into a larger tensor (a leading dimension, as BLAS's
// lda: rows `lda` elements apart), which the schedule cannot change.

#include "dsl/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace coalesce {

class Input {
public:
  Input(std::string name, Type type, std::vector<Expr> extents);
  /// A view: element (x0, ..., xn) at x0 * strides[0] + ... + xn * strides[n]
  /// (in elements, outermost first; the last stride is 1, the innermost
  /// dimension contiguous; the others i32 expressions, constants or Params,
  /// at least 1). The buffer passed for it holds at least the elements the
  /// view reaches.
  Input(std::string name, Type type, std::vector<Expr> extents, std::vector<Expr> strides);

  Expr operator()(std::vector<Expr> args) const;
  template <typename... Args> Expr operator()(const Expr &first, const Args &...rest) const {
    return (*this)(std::vector<Expr>{first, Expr(rest)...});
  }

  const std::string &name() const { return contents_->name; }
  Type type() const { return contents_->type; }
  const std::vector<Expr> &extents() const { return contents_->extents; }
  int dimensions() const { return static_cast<int>(contents_->extents.size()); }
  /// The declared strides; empty for a dense input.
  const std::vector<Expr> &strides() const { return contents_->strides; }

private:
  std::shared_ptr<const InputContents> contents_;
};

/// Whether every row of `input` starts a multiple of `elements` elements
/// into its buffer (what 16-byte vector copies and the TMA need): its
/// innermost extent is such a multiple for a dense input, its outer strides
/// are for a view.
Expr rows_start_at_multiples(const InputContents &input, int elements);

/// A UserError naming `what` (an Input, or the output Func) unless
/// `strides` are a view's: one per dimension, each an i32 expression, the
/// innermost 1, constants at least 1.
void check_view_strides(const std::string &what, size_t dimensions, const std::vector<Expr> &strides);

/// Whether every row of a view with `strides` starts a multiple of
/// `elements` elements into its buffer: each outer stride is such a
/// multiple (true for a single dimension).
Expr strides_are_multiples(const std::vector<Expr> &strides, int elements);

} // namespace coalesce
