#pragma once
// Read-only and rebuilding traversals of the IR. Both dispatch with a switch
// over IRNodeKind (no default case), generated from the node list in IR.h.

#include "dsl/IR.h"

namespace coalesce {

/// Walks every node; override the visit() of the kinds you care about and
/// call the base to keep recursing.
class IRVisitor {
public:
  virtual ~IRVisitor() = default;
  void visit_expr(const Expr &e);
  void visit_stmt(const Stmt &s);

protected:
#define COALESCE_VISIT(name) virtual void visit(const name *);
  COALESCE_FOR_EACH_EXPR(COALESCE_VISIT) COALESCE_FOR_EACH_STMT(COALESCE_VISIT)
#undef COALESCE_VISIT
};

/// Rebuilds the IR bottom-up, sharing every subtree that did not change.
class IRMutator {
public:
  virtual ~IRMutator() = default;
  Expr mutate(const Expr &e);
  Stmt mutate(const Stmt &s);

protected:
#define COALESCE_MUTATE_EXPR(name) virtual Expr visit(const name *, const Expr &self);
#define COALESCE_MUTATE_STMT(name) virtual Stmt visit(const name *, const Stmt &self);
  COALESCE_FOR_EACH_EXPR(COALESCE_MUTATE_EXPR) COALESCE_FOR_EACH_STMT(COALESCE_MUTATE_STMT)
#undef COALESCE_MUTATE_EXPR
#undef COALESCE_MUTATE_STMT
};

} // namespace coalesce
