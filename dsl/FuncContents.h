#pragma once
// What a Func holds: its pure definition, its updates and the schedule its
// methods record. Internal: the front end's passes read and rewrite copies
// of it; a program sees only Func (dsl/Func.h), which holds it by pointer,
// and runtime/Coalesce.h does not include this header.

#include "dsl/IR.h"
#include "dsl/Schedule.h"

#include <string>
#include <vector>

namespace coalesce::internal {

/// One definition of a Func: its left-hand side coordinates and value.
struct Definition {
  std::vector<Expr> args;
  Expr value;
};

/// A Func's definitions and schedule, shared by the Func handles naming it.
struct FuncContents {
  std::string name;
  std::vector<std::string> pure_vars;
  Type type;
  bool defined = false;
  Definition pure;
  std::vector<Definition> updates;
  FuncSchedule schedule;
  /// The pipeline's output as a view (Func::output_strides): element
  /// strides, outermost first; empty: dense. Part of the algorithm.
  std::vector<Expr> output_strides;
};

} // namespace coalesce::internal
