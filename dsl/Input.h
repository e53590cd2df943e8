#pragma once
// An input buffer of an algorithm: a name, an element type and symbolic
// extents. Row-major: the last dimension is contiguous.

#include "dsl/IR.h"

#include <memory>
#include <string>
#include <vector>

namespace coalesce {

class Input {
public:
  Input(std::string name, Type type, std::vector<Expr> extents);

  Expr operator()(std::vector<Expr> args) const;
  template <typename... Args> Expr operator()(const Expr &first, const Args &...rest) const {
    return (*this)(std::vector<Expr>{first, Expr(rest)...});
  }

  const std::string &name() const { return contents_->name; }
  Type type() const { return contents_->type; }
  const std::vector<Expr> &extents() const { return contents_->extents; }
  int dimensions() const { return static_cast<int>(contents_->extents.size()); }

private:
  std::shared_ptr<const InputContents> contents_;
};

} // namespace coalesce
