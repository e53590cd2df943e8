#pragma once
// Analysis shared by the passes that reason about a statement every thread
// of a block runs once per tile (partition_full_tiles, stage_output_tiles):
// an integer expression as `uniform + [lo, hi]`, where `uniform` is the same
// for every thread and iteration of the statement and the interval bounds
// the rest over the statement's own loops (constant bounds) and lets.
//
//   bi*128 + warp % 4*16 + lane / 4 + fi*8   ->   bi*128 + [0, 127]
//
// Handled: sums, differences, multiples by constants, and divisions and
// remainders by positive constants (which truncate, as in C); anything else
// has no range.

#include "dsl/IR.h"
#include "dsl/IRVisitor.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace coalesce {

/// The names `s` binds (its loops and lets): not uniform inside it.
std::set<std::string> names_bound_in(const Stmt &s);

/// Whether `s` is per-element code that a pass may copy or rewrite whole:
/// its loops have constant bounds, and it holds no allocation, barrier,
/// MMA, tensor copy or intrinsic statement (which a copy would double).
bool is_per_element_code(const Stmt &s);

/// `uniform + [lo, hi]`; `uniform` undefined stands for 0.
struct UniformRange {
  Expr uniform;
  int64_t lo = 0, hi = 0;
};

/// The ranges of expressions at one point of a walk through a statement:
/// the walker enters and leaves the statement's loops and lets.
class UniformRanges {
public:
  /// `bound`: every name the statement binds (loops and lets), which is not
  /// uniform wherever it is not in scope.
  explicit UniformRanges(std::set<std::string> bound) : bound_(std::move(bound)) {}
  void enter_loop(const std::string &name, int64_t min, int64_t max) { loops_[name] = {min, max}; }
  void leave_loop(const std::string &name) { loops_.erase(name); }
  void enter_let(const std::string &name, const Expr &value) { lets_[name] = of(value); }
  void leave_let(const std::string &name) { lets_.erase(name); }
  /// The range of an integer expression here, or nothing.
  std::optional<UniformRange> of(const Expr &e) const;

private:
  bool uses_no_bound_name(const Expr &e) const;
  const std::set<std::string> bound_;
  std::map<std::string, std::pair<int64_t, int64_t>> loops_;
  std::map<std::string, std::optional<UniformRange>> lets_;
};

/// An IRMutator over per-element code (is_per_element_code) that keeps its
/// UniformRanges in step with the loops and lets it passes through; an
/// empty loop is left as it is.
class UniformRangesMutator : public IRMutator {
public:
  explicit UniformRangesMutator(std::set<std::string> bound) : ranges_(std::move(bound)) {}

protected:
  using IRMutator::visit;
  const UniformRanges &ranges() const { return ranges_; }
  Stmt visit(const For *op, const Stmt &self) override;
  Stmt visit(const LetStmt *op, const Stmt &self) override;

private:
  UniformRanges ranges_;
};

} // namespace coalesce
