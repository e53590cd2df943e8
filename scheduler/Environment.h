#pragma once
// The pipeline as lowering sees it: private copies of every Func the output
// depends on (so passes may rewrite definitions without touching the user's
// Funcs), the inputs and parameters they read, and the output's domain.

#include "dsl/Func.h"
#include "dsl/FuncContents.h"

#include <map>
#include <string>
#include <vector>

namespace coalesce {

// The passes work on the insides of Funcs (private copies of them).
using internal::Definition;
using internal::FuncContents;

struct Environment {
  /// Producers before consumers; the output is last.
  std::vector<FuncContents> funcs;
  std::map<std::string, std::shared_ptr<const InputContents>> inputs;
  /// Scalar parameters, sorted by name.
  std::vector<std::string> params;
  /// Extents of the output's pure dimensions (shared by every Func).
  std::vector<Expr> domain;

  const FuncContents &output() const { return funcs.back(); }
  const FuncContents *find(const std::string &name) const;
  FuncContents *find(const std::string &name);
  /// The Funcs whose definitions call `name` directly.
  std::vector<std::string> consumers_of(const std::string &name) const;
  /// The Funcs `name`'s definitions call directly (itself included, where
  /// an update reads its running value), each once.
  std::vector<std::string> callees_of(const std::string &name) const;
};

/// Collects the Funcs, inputs and params `output` depends on, in realization
/// order. Rejects two different Funcs or inputs of one name.
Environment make_environment(const Func &output);

} // namespace coalesce
