#pragma once
// Names in an algorithm: pure variables (Var), reduction variables (RVar,
// from an RDom) and scalar parameters (Param).

#include "dsl/IR.h"
#include "dsl/IROperator.h"

#include <string>

namespace coalesce {

/// Rejects a name that is not ASCII letters, digits and '_' starting with a
/// letter; `what` ("Var", "Func", ...) names it in the message.
void check_identifier(const std::string &name, const char *what);

/// A pure variable: a coordinate of a Func, and later the name of a loop.
class Var {
public:
  explicit Var(std::string name);
  const std::string &name() const { return name_; }
  operator Expr() const; // NOLINT: a Var is usable wherever an Expr is

private:
  std::string name_;
};

/// A reduction variable: iterates over [min, min + extent) inside an update.
class RVar {
public:
  RVar(std::string name, Expr min, Expr extent);
  /// A name for a loop made by splitting a reduction loop (no domain of its own).
  explicit RVar(std::string name);
  const std::string &name() const { return name_; }
  const Expr &min() const { return min_; }
  const Expr &extent() const { return extent_; }
  operator Expr() const; // NOLINT

private:
  std::string name_;
  Expr min_, extent_;
};

/// A one-dimensional reduction domain: `RDom k(0, K, "k")` sums over k in [0, K).
class RDom {
public:
  RDom(Expr min, Expr extent, std::string name);
  const RVar &var() const { return var_; }
  operator RVar() const { return var_; } // NOLINT
  operator Expr() const { return var_; } // NOLINT

private:
  RVar var_;
};

/// A scalar i32 parameter known only when the pipeline runs (a shape, say).
class Param {
public:
  explicit Param(std::string name);
  const std::string &name() const { return name_; }
  operator Expr() const; // NOLINT

private:
  std::string name_;
};

/// Either kind of loop variable, so one schedule call accepts both.
struct VarOrRVar {
  VarOrRVar(const Var &v) : name(v.name()), is_rvar(false) {}    // NOLINT
  VarOrRVar(const RVar &v) : name(v.name()), is_rvar(true) {}    // NOLINT
  VarOrRVar(const RDom &r) : name(r.var().name()), is_rvar(true) {} // NOLINT
  std::string name;
  bool is_rvar;
};

} // namespace coalesce
