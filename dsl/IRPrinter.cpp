#include "dsl/IRPrinter.h"

#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <cstdio>
#include <sstream>

namespace coalesce {

namespace {

// Binding strength of each operator, for printing only the parentheses a
// reader needs.
int precedence(const Expr &e) {
  switch (e.get()->kind) {
  case IRNodeKind::Or: return 1;
  case IRNodeKind::And: return 2;
  case IRNodeKind::EQ: case IRNodeKind::NE: case IRNodeKind::LT:
  case IRNodeKind::LE: case IRNodeKind::GT: case IRNodeKind::GE: return 3;
  case IRNodeKind::Add: case IRNodeKind::Sub: return 4;
  case IRNodeKind::Mul: case IRNodeKind::Div: case IRNodeKind::Mod: return 5;
  case IRNodeKind::Not: return 6;
  case IRNodeKind::IntImm: case IRNodeKind::FloatImm: case IRNodeKind::Variable:
  case IRNodeKind::Cast: case IRNodeKind::Min: case IRNodeKind::Max: case IRNodeKind::Select:
  case IRNodeKind::Load: case IRNodeKind::Call: case IRNodeKind::Let: return 7;
#define COALESCE_CASE(name) case IRNodeKind::name:
    COALESCE_FOR_EACH_STMT(COALESCE_CASE)
#undef COALESCE_CASE
    return 0;
  }
  return 0;
}

class Printer : public IRVisitor {
public:
  explicit Printer(std::ostream &out) : out_(out) {}
  void print(const Expr &e, int context_precedence = 0, bool right = false) {
    if (!e.defined()) {
      out_ << "<undefined>";
      return;
    }
    int mine = precedence(e);
    bool parens = mine < context_precedence || (right && mine == context_precedence && mine < 7);
    if (parens)
      out_ << "(";
    visit_expr(e);
    if (parens)
      out_ << ")";
  }
  void print(const Stmt &s) { visit_stmt(s); }

private:
  using IRVisitor::visit;
  std::ostream &out_;
  int indent_ = 0;

  void line_start() { out_ << std::string(indent_ * 2, ' '); }
  void nested(const Stmt &s) {
    ++indent_;
    print(s);
    --indent_;
  }
  template <typename Node> void binary(const Node *op, const char *symbol, int prec) {
    print(op->a, prec);
    out_ << symbol;
    print(op->b, prec, true);
  }
  void list(const std::vector<Expr> &values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i)
        out_ << ", ";
      print(values[i]);
    }
  }

  void visit(const IntImm *op) override {
    if (op->type.is_bool())
      out_ << (op->value ? "true" : "false");
    else
      out_ << op->value;
  }
  void visit(const FloatImm *op) override {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", op->value);
    std::string s = text;
    if (s.find_first_of(".eni") == std::string::npos)
      s += ".0";
    out_ << s << "f";
  }
  void visit(const Variable *op) override { out_ << op->name; }
  void visit(const Cast *op) override {
    out_ << op->type << "(";
    print(op->value);
    out_ << ")";
  }
  void visit(const Add *op) override { binary(op, " + ", 4); }
  void visit(const Sub *op) override { binary(op, " - ", 4); }
  void visit(const Mul *op) override { binary(op, "*", 5); }
  void visit(const Div *op) override {
    // (a + (b - 1)) / b is how splits write ceil(a / b); say so.
    const auto *sum = op->a.as<Add>();
    auto divisor = as_const_int(op->b);
    auto addend = sum ? as_const_int(sum->b) : std::nullopt;
    if (divisor && addend && *addend == *divisor - 1 && op->type.is_int()) {
      out_ << "ceil(";
      print(sum->a, 5);
      out_ << "/" << *divisor << ")";
      return;
    }
    binary(op, "/", 5);
  }
  void visit(const Mod *op) override { binary(op, " % ", 5); }
  void visit(const Min *op) override {
    out_ << "min(";
    print(op->a);
    out_ << ", ";
    print(op->b);
    out_ << ")";
  }
  void visit(const Max *op) override {
    out_ << "max(";
    print(op->a);
    out_ << ", ";
    print(op->b);
    out_ << ")";
  }
  void visit(const EQ *op) override { binary(op, " == ", 3); }
  void visit(const NE *op) override { binary(op, " != ", 3); }
  void visit(const LT *op) override { binary(op, " < ", 3); }
  void visit(const LE *op) override { binary(op, " <= ", 3); }
  void visit(const GT *op) override { binary(op, " > ", 3); }
  void visit(const GE *op) override { binary(op, " >= ", 3); }
  void visit(const And *op) override { binary(op, " && ", 2); }
  void visit(const Or *op) override { binary(op, " || ", 1); }
  void visit(const Not *op) override {
    out_ << "!";
    print(op->a, 6);
  }
  void visit(const Select *op) override {
    out_ << "select(";
    print(op->condition);
    out_ << ", ";
    print(op->true_value);
    out_ << ", ";
    print(op->false_value);
    out_ << ")";
  }
  void visit(const Load *op) override {
    out_ << op->buffer << "[";
    list(op->indices);
    out_ << "]";
  }
  void visit(const Call *op) override {
    out_ << op->name << "(";
    list(op->args);
    out_ << ")";
  }
  void visit(const Let *op) override {
    out_ << "(let " << op->name << " = ";
    print(op->value);
    out_ << " in ";
    print(op->body);
    out_ << ")";
  }

  void visit(const For *op) override {
    line_start();
    out_ << "for " << op->name << " in " << for_kind_name(op->for_kind);
    if (op->gpu_dim >= 0)
      out_ << "." << "xyz"[op->gpu_dim];
    out_ << "(";
    print(op->min);
    out_ << ", ";
    print(op->extent);
    out_ << "):";
    for (size_t f = 0; f < op->reduction_of.size(); ++f)
      out_ << (f ? " and " : "  # reduction of ") << op->reduction_of[f];
    if (op->role == LoopRole::ProducerWarps)
      out_ << "  # producer warps";
    if (op->role == LoopRole::PersistentTiles)
      out_ << "  # the tiles of this block of a persistent grid";
    if (op->role == LoopRole::PaddedCopy && op->for_kind == ForKind::GpuBlock)
      out_ << "  # a kernel of its own: the copy the TMA reads";
    out_ << "\n";
    nested(op->body);
  }
  void visit(const Store *op) override {
    line_start();
    out_ << op->buffer << "[";
    list(op->indices);
    out_ << "] = ";
    print(op->value);
    out_ << "\n";
  }
  void visit(const Allocate *op) override {
    line_start();
    out_ << "allocate " << op->name;
    for (const Expr &extent : op->extents) {
      out_ << "[";
      print(extent);
      out_ << "]";
    }
    out_ << " " << op->type << " in " << memory_type_name(op->memory) << "\n";
    print(op->body);
  }
  void visit(const Block *op) override {
    for (const Stmt &s : op->stmts)
      print(s);
  }
  void visit(const IfThenElse *op) override {
    line_start();
    out_ << "if ";
    print(op->condition);
    out_ << ":\n";
    nested(op->then_case);
    if (op->else_case.defined()) {
      line_start();
      out_ << "else:\n";
      nested(op->else_case);
    }
  }
  void visit(const LetStmt *op) override {
    line_start();
    out_ << "let " << op->name << " = ";
    print(op->value);
    out_ << "\n";
    print(op->body);
  }
  void visit(const Barrier *op) override {
    line_start();
    out_ << "barrier";
    if (op->threads > 0)
      out_ << " (the first " << op->threads << " threads)";
    out_ << "\n";
  }
  void visit(const Evaluate *op) override {
    line_start();
    print(op->value);
    out_ << "\n";
  }
  void visit(const WarpMma *op) override {
    line_start();
    if (is_warpgroup_mma(op->kind)) {
      out_ << "warpgroup_mma " << mma_kind_name(op->kind) << " m64n" << op->n << "k" << mma_k(op->kind) << ", warp ";
      print(op->warp);
      out_ << ", lane ";
      print(op->lane);
      out_ << " (A: stride " << op->a.stride_bytes << " B" << (op->a.mn_major ? ", mn-major" : "") << "; B: leading "
           << op->b.leading_bytes << " B, stride " << op->b.stride_bytes << " B" << (op->b.mn_major ? ", mn-major" : "")
           << "; 128-byte swizzle), for each element (mma.m, mma.n) of its fragments, for mma.k:\n";
    } else {
      out_ << "warp_mma " << mma_kind_name(op->kind) << ", lane ";
      print(op->lane);
      out_ << ", for each element (mma.m, mma.n) of its fragment, for mma.k:\n";
    }
    nested(op->update);
  }
  void visit(const TmaStaging *op) override {
    line_start();
    out_ << "tma_staging (for lower_tma_pipelines) of:\n";
    nested(op->loop);
    line_start();
    out_ << "its cp.async pipeline:\n";
    nested(op->fallback);
  }
  void visit(const PipelinedStaging *op) override {
    line_start();
    out_ << "pipelined_staging (for pipeline_staged_copies) of:\n";
    nested(op->loop);
  }
  void visit(const ProducerBoundary *op) override {
    static const char *const what[] = {"start", "leave", "idle"};
    line_start();
    out_ << "producer_warps_" << what[static_cast<int>(op->point)] << " (for reallocate_registers";
    if (op->registers > 0)
      out_ << ": keep " << op->registers << " registers";
    out_ << ")\n";
  }
  void visit(const TensorCopy *op) override {
    line_start();
    out_ << "tensor_copy " << op->input << "[";
    for (size_t d = 0; d < op->origin.size(); ++d) {
      out_ << (d ? ", " : "");
      print(op->origin[d]);
    }
    out_ << "] box ";
    for (size_t d = 0; d < op->box.size(); ++d)
      out_ << (d ? "x" : "") << op->box[d];
    out_ << " (0 outside " << op->input << ")";
    if (op->multicast > 1)
      out_ << " multicast to the cluster's " << op->multicast << " blocks (this block's "
           << op->issued_box()[op->box.size() - 2] << " rows)";
    out_ << " -> ";
    print(op->destination);
    out_ << ", completes on ";
    print(op->barrier);
    out_ << "\n";
  }
};

} // namespace

std::ostream &operator<<(std::ostream &out, const Expr &e) {
  Printer(out).print(e);
  return out;
}

std::ostream &operator<<(std::ostream &out, const Stmt &s) {
  Printer(out).print(s);
  return out;
}

std::string to_string(const Expr &e) {
  std::ostringstream out;
  out << e;
  return out.str();
}

std::string to_string(const Stmt &s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

} // namespace coalesce
