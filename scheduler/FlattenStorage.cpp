#include "scheduler/FlattenStorage.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "dsl/Input.h"

#include <map>

namespace coalesce {

namespace {
class Flatten : public IRMutator {
public:
  explicit Flatten(const std::vector<Argument> &args) {
    for (const Argument &arg : args)
      if (arg.is_buffer()) {
        extents_[arg.name] = arg.extents;
        if (!arg.strides.empty())
          strides_[arg.name] = arg.strides;
      }
  }

private:
  using IRMutator::visit;
  std::map<std::string, std::vector<Expr>> extents_;
  std::map<std::string, std::vector<Expr>> strides_; // views (an Input's or the output's strides); others are dense

  Expr flat(const std::string &buffer, const std::vector<Expr> &indices) {
    auto it = extents_.find(buffer);
    COALESCE_INTERNAL_ASSERT(it != extents_.end(), "access to unknown buffer '", buffer, "'");
    COALESCE_INTERNAL_ASSERT(it->second.size() == indices.size(), "access to '", buffer, "' with ", indices.size(),
                             " indices; it has ", it->second.size(), " dimensions");
    if (indices.empty())
      return 0;
    if (auto view = strides_.find(buffer); view != strides_.end()) {
      // The contiguous dimension's index (its stride 1: the innermost, or a
      // column-major output's next-to-innermost), plus the others' steps.
      const size_t contiguous = contiguous_dimension(view->second);
      Expr index = indices[contiguous];
      for (size_t d = 0; d < indices.size(); ++d)
        if (d != contiguous)
          index = indices[d] * view->second[d] + index;
      return index;
    }
    Expr index = indices[0];
    for (size_t d = 1; d < indices.size(); ++d)
      index = index * it->second[d] + indices[d];
    return index;
  }
  Stmt visit(const Allocate *op, const Stmt &self) override {
    auto previous = extents_.find(op->name);
    std::vector<Expr> saved;
    bool shadowing = previous != extents_.end();
    if (shadowing)
      saved = previous->second;
    extents_[op->name] = op->extents;
    Stmt body = mutate(op->body);
    if (shadowing)
      extents_[op->name] = saved;
    else
      extents_.erase(op->name);
    Expr size = 1;
    for (const Expr &e : op->extents)
      size = size * e;
    return Allocate::make(op->name, op->type, op->memory, {size}, body, op->staged_input);
  }
  Stmt visit(const Store *op, const Stmt &self) override {
    Expr value = mutate(op->value);
    std::vector<Expr> indices;
    for (const Expr &i : op->indices)
      indices.push_back(mutate(i));
    return Store::make(op->buffer, {flat(op->buffer, indices)}, value);
  }
  Expr visit(const Load *op, const Expr &self) override {
    std::vector<Expr> indices;
    for (const Expr &i : op->indices)
      indices.push_back(mutate(i));
    return Load::make(op->type, op->buffer, {flat(op->buffer, indices)});
  }
};
} // namespace

Stmt flatten_storage(const Stmt &s, const std::vector<Argument> &args) { return Flatten(args).mutate(s); }

} // namespace coalesce
