#include "dsl/IRVisitor.h"

namespace coalesce {

void IRVisitor::visit_expr(const Expr &e) {
  if (!e.defined())
    return;
  switch (e.get()->kind) {
#define COALESCE_CASE(name)                                                                        \
  case IRNodeKind::name: return visit(static_cast<const name *>(e.get()));
    COALESCE_FOR_EACH_EXPR(COALESCE_CASE)
#undef COALESCE_CASE
#define COALESCE_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_STMT(COALESCE_CASE)
#undef COALESCE_CASE
    return;
  }
}

void IRVisitor::visit_stmt(const Stmt &s) {
  if (!s.defined())
    return;
  switch (s.get()->kind) {
#define COALESCE_CASE(name)                                                                        \
  case IRNodeKind::name: return visit(static_cast<const name *>(s.get()));
    COALESCE_FOR_EACH_STMT(COALESCE_CASE)
#undef COALESCE_CASE
#define COALESCE_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_EXPR(COALESCE_CASE)
#undef COALESCE_CASE
    return;
  }
}

void IRVisitor::visit(const IntImm *) {}
void IRVisitor::visit(const FloatImm *) {}
void IRVisitor::visit(const Variable *) {}
void IRVisitor::visit(const Cast *op) { visit_expr(op->value); }
#define COALESCE_BINARY_VISIT(name)                                                                \
  void IRVisitor::visit(const name *op) {                                                          \
    visit_expr(op->a);                                                                             \
    visit_expr(op->b);                                                                             \
  }
COALESCE_BINARY_VISIT(Add) COALESCE_BINARY_VISIT(Sub) COALESCE_BINARY_VISIT(Mul)
COALESCE_BINARY_VISIT(Div) COALESCE_BINARY_VISIT(Mod) COALESCE_BINARY_VISIT(Min)
COALESCE_BINARY_VISIT(Max) COALESCE_BINARY_VISIT(EQ) COALESCE_BINARY_VISIT(NE)
COALESCE_BINARY_VISIT(LT) COALESCE_BINARY_VISIT(LE) COALESCE_BINARY_VISIT(GT)
COALESCE_BINARY_VISIT(GE) COALESCE_BINARY_VISIT(And) COALESCE_BINARY_VISIT(Or)
#undef COALESCE_BINARY_VISIT
void IRVisitor::visit(const Not *op) { visit_expr(op->a); }
void IRVisitor::visit(const Select *op) {
  visit_expr(op->condition);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void IRVisitor::visit(const Load *op) {
  for (const Expr &index : op->indices)
    visit_expr(index);
}
void IRVisitor::visit(const Call *op) {
  for (const Expr &arg : op->args)
    visit_expr(arg);
}
void IRVisitor::visit(const Let *op) {
  visit_expr(op->value);
  visit_expr(op->body);
}
void IRVisitor::visit(const For *op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const Store *op) {
  for (const Expr &index : op->indices)
    visit_expr(index);
  visit_expr(op->value);
}
void IRVisitor::visit(const Allocate *op) {
  for (const Expr &extent : op->extents)
    visit_expr(extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const Block *op) {
  for (const Stmt &s : op->stmts)
    visit_stmt(s);
}
void IRVisitor::visit(const IfThenElse *op) {
  visit_expr(op->condition);
  visit_stmt(op->then_case);
  visit_stmt(op->else_case);
}
void IRVisitor::visit(const LetStmt *op) {
  visit_expr(op->value);
  visit_stmt(op->body);
}
void IRVisitor::visit(const Barrier *) {}
void IRVisitor::visit(const Evaluate *op) { visit_expr(op->value); }
void IRVisitor::visit(const WarpMma *op) {
  visit_expr(op->lane);
  if (op->warp.defined())
    visit_expr(op->warp);
  visit_stmt(op->update);
}

void IRVisitor::visit(const TensorCopy *op) {
  for (const Expr &e : op->origin)
    visit_expr(e);
  visit_expr(op->destination);
  visit_expr(op->barrier);
  visit_stmt(op->copy);
}

void IRVisitor::visit(const TmaStaging *op) {
  visit_stmt(op->loop);
  visit_stmt(op->fallback);
}

void IRVisitor::visit(const PipelinedStaging *op) { visit_stmt(op->loop); }

void IRVisitor::visit(const ProducerBoundary *op) {
  visit_stmt(op->producers);
  visit_stmt(op->consumers);
}

// ------------------------------------------------------------------- mutator

Expr IRMutator::mutate(const Expr &e) {
  if (!e.defined())
    return e;
  switch (e.get()->kind) {
#define COALESCE_CASE(name)                                                                        \
  case IRNodeKind::name: return visit(static_cast<const name *>(e.get()), e);
    COALESCE_FOR_EACH_EXPR(COALESCE_CASE)
#undef COALESCE_CASE
#define COALESCE_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_STMT(COALESCE_CASE)
#undef COALESCE_CASE
    return e;
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt &s) {
  if (!s.defined())
    return s;
  switch (s.get()->kind) {
#define COALESCE_CASE(name)                                                                        \
  case IRNodeKind::name: return visit(static_cast<const name *>(s.get()), s);
    COALESCE_FOR_EACH_STMT(COALESCE_CASE)
#undef COALESCE_CASE
#define COALESCE_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_EXPR(COALESCE_CASE)
#undef COALESCE_CASE
    return s;
  }
  return s;
}

namespace {
bool same_all(const std::vector<Expr> &a, const std::vector<Expr> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i]))
      return false;
  return true;
}
} // namespace

Expr IRMutator::visit(const IntImm *, const Expr &self) { return self; }
Expr IRMutator::visit(const FloatImm *, const Expr &self) { return self; }
Expr IRMutator::visit(const Variable *, const Expr &self) { return self; }
Expr IRMutator::visit(const Cast *op, const Expr &self) {
  Expr value = mutate(op->value);
  return value.same_as(op->value) ? self : Cast::make(op->type, value);
}
#define COALESCE_BINARY_MUTATE(name)                                                               \
  Expr IRMutator::visit(const name *op, const Expr &self) {                                        \
    Expr a = mutate(op->a), b = mutate(op->b);                                                     \
    return a.same_as(op->a) && b.same_as(op->b) ? self : name::make(a, b);                         \
  }
COALESCE_BINARY_MUTATE(Add) COALESCE_BINARY_MUTATE(Sub) COALESCE_BINARY_MUTATE(Mul)
COALESCE_BINARY_MUTATE(Div) COALESCE_BINARY_MUTATE(Mod) COALESCE_BINARY_MUTATE(Min)
COALESCE_BINARY_MUTATE(Max) COALESCE_BINARY_MUTATE(EQ) COALESCE_BINARY_MUTATE(NE)
COALESCE_BINARY_MUTATE(LT) COALESCE_BINARY_MUTATE(LE) COALESCE_BINARY_MUTATE(GT)
COALESCE_BINARY_MUTATE(GE) COALESCE_BINARY_MUTATE(And) COALESCE_BINARY_MUTATE(Or)
#undef COALESCE_BINARY_MUTATE
Expr IRMutator::visit(const Not *op, const Expr &self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : Not::make(a);
}
Expr IRMutator::visit(const Select *op, const Expr &self) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
    return self;
  return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load *op, const Expr &self) {
  std::vector<Expr> indices;
  for (const Expr &index : op->indices)
    indices.push_back(mutate(index));
  return same_all(indices, op->indices) ? self : Load::make(op->type, op->buffer, indices);
}
Expr IRMutator::visit(const Call *op, const Expr &self) {
  std::vector<Expr> args;
  for (const Expr &arg : op->args)
    args.push_back(mutate(arg));
  return same_all(args, op->args) ? self : op->with_args(args);
}
Expr IRMutator::visit(const Let *op, const Expr &self) {
  Expr value = mutate(op->value), body = mutate(op->body);
  return value.same_as(op->value) && body.same_as(op->body) ? self
                                                            : Let::make(op->name, value, body);
}

Stmt IRMutator::visit(const For *op, const Stmt &self) {
  Expr min = mutate(op->min), extent = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body))
    return self;
  if (!body.defined())
    return Stmt();
  return For::make(op->name, min, extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
}
Stmt IRMutator::visit(const Store *op, const Stmt &self) {
  std::vector<Expr> indices;
  for (const Expr &index : op->indices)
    indices.push_back(mutate(index));
  Expr value = mutate(op->value);
  if (same_all(indices, op->indices) && value.same_as(op->value))
    return self;
  return Store::make(op->buffer, indices, value);
}
Stmt IRMutator::visit(const Allocate *op, const Stmt &self) {
  std::vector<Expr> extents;
  for (const Expr &extent : op->extents)
    extents.push_back(mutate(extent));
  Stmt body = mutate(op->body);
  if (same_all(extents, op->extents) && body.same_as(op->body))
    return self;
  if (!body.defined())
    return Stmt();
  return Allocate::make(op->name, op->type, op->memory, extents, body, op->staged_input);
}
Stmt IRMutator::visit(const Block *op, const Stmt &self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt &s : op->stmts) {
    stmts.push_back(mutate(s));
    changed |= !stmts.back().same_as(s);
  }
  return changed ? Block::make(stmts) : self;
}
Stmt IRMutator::visit(const IfThenElse *op, const Stmt &self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case))
    return self;
  if (!t.defined() && !e.defined())
    return Stmt();
  if (!t.defined())
    return IfThenElse::make(Not::make(c), e);
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const LetStmt *op, const Stmt &self) {
  Expr value = mutate(op->value);
  Stmt body = mutate(op->body);
  if (value.same_as(op->value) && body.same_as(op->body))
    return self;
  if (!body.defined())
    return Stmt();
  return LetStmt::make(op->name, value, body);
}
Stmt IRMutator::visit(const Barrier *, const Stmt &self) { return self; }
Stmt IRMutator::visit(const Evaluate *op, const Stmt &self) {
  Expr value = mutate(op->value);
  return value.same_as(op->value) ? self : Evaluate::make(value);
}
Stmt IRMutator::visit(const WarpMma *op, const Stmt &self) {
  Expr lane = mutate(op->lane);
  Expr warp = op->warp.defined() ? mutate(op->warp) : Expr();
  Stmt update = mutate(op->update);
  if (lane.same_as(op->lane) && warp.same_as(op->warp) && update.same_as(op->update))
    return self;
  return op->rebuild(lane, warp, update);
}

Stmt IRMutator::visit(const TensorCopy *op, const Stmt &self) {
  bool changed = false;
  std::vector<Expr> origin;
  for (const Expr &e : op->origin) {
    origin.push_back(mutate(e));
    changed |= !origin.back().same_as(e);
  }
  Expr destination = mutate(op->destination);
  Expr barrier = mutate(op->barrier);
  Stmt copy = mutate(op->copy);
  if (!changed && destination.same_as(op->destination) && barrier.same_as(op->barrier) && copy.same_as(op->copy))
    return self;
  return TensorCopy::make(op->input, origin, op->box, destination, barrier, copy, op->multicast);
}

Stmt IRMutator::visit(const TmaStaging *op, const Stmt &self) {
  Stmt loop = mutate(op->loop);
  Stmt fallback = mutate(op->fallback);
  if (loop.same_as(op->loop) && fallback.same_as(op->fallback))
    return self;
  return TmaStaging::make(loop, fallback);
}

Stmt IRMutator::visit(const PipelinedStaging *op, const Stmt &self) {
  Stmt loop = mutate(op->loop);
  return loop.same_as(op->loop) ? self : PipelinedStaging::make(loop);
}

Stmt IRMutator::visit(const ProducerBoundary *op, const Stmt &self) {
  Stmt producers = mutate(op->producers);
  Stmt consumers = mutate(op->consumers);
  if (producers.same_as(op->producers) && consumers.same_as(op->consumers))
    return self;
  return ProducerBoundary::make(op->point, producers, consumers, op->registers, op->stage, op->loop);
}

} // namespace coalesce
