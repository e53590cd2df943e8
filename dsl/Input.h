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

/// Which dimension of a view may be the contiguous one: an Input's
/// innermost (a column-major input is declared the other way round and
/// read with its coordinates swapped); an output's innermost (row-major)
/// or next-to-innermost (column-major: out(i, j) at i + j * ldc), since the
/// algorithm names the output's coordinates once, for every layout.
enum class ViewOrders { RowMajor, RowOrColumnMajor };

/// A UserError naming `what` (an Input, or the output Func) unless
/// `strides` are a view's: one per dimension, each an i32 expression,
/// constants at least 1, the constant 1 in a dimension `orders` allows.
void check_view_strides(const std::string &what, size_t dimensions, const std::vector<Expr> &strides,
                        ViewOrders orders = ViewOrders::RowMajor);

/// The contiguous dimension of a view (its stride the constant 1): the
/// innermost where it is, else the next-to-innermost (a column-major
/// output); the innermost for a dense tensor (no strides).
size_t contiguous_dimension(const std::vector<Expr> &strides);

/// Whether every run of a view with `strides` along its contiguous
/// dimension (a row, or a column-major output's column) starts a multiple of
/// `elements` elements into its buffer: every other stride is such a
/// multiple (true for a single dimension).
Expr strides_are_multiples(const std::vector<Expr> &strides, int elements);

} // namespace coalesce
