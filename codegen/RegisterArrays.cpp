#include "codegen/RegisterArrays.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"

#include <set>

namespace coalesce {

namespace {

std::optional<int64_t> constant_index(const std::vector<Expr> &indices) {
  return indices.size() == 1 ? as_const_int(indices[0]) : std::nullopt;
}

// Whether every access to one buffer is a plain load or store of its type
// at a constant index inside it.
class CheckAccesses : public IRVisitor {
public:
  CheckAccesses(const Allocate *op, int64_t elements) : op_(op), elements_(elements) {}
  bool plain = true;

private:
  using IRVisitor::visit;
  const Allocate *op_;
  int64_t elements_;
  int addressed_ = 0; // inside an operation that reads or writes through addresses

  bool fits(const std::vector<Expr> &indices) const {
    std::optional<int64_t> index = constant_index(indices);
    return index && *index >= 0 && *index < elements_;
  }
  void visit(const Load *op) override {
    if (op->buffer == op_->name)
      plain &= !addressed_ && op->type == op_->type && fits(op->indices);
    IRVisitor::visit(op);
  }
  void visit(const Store *op) override {
    if (op->buffer == op_->name) {
      // An async copy or an atomic stores through the element's address.
      const auto *call = op->value.as<Call>();
      bool addressed = call && call->intrinsic &&
                       (*call->intrinsic == Intrinsic::AsyncLoad || *call->intrinsic == Intrinsic::AsyncLoadVector ||
                        *call->intrinsic == Intrinsic::LoadVector || *call->intrinsic == Intrinsic::AtomicAdd);
      plain &= !addressed_ && !addressed && op->value.type() == op_->type && fits(op->indices);
    }
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    // Its operands are read through their addresses (the counter's load).
    if (op->intrinsic && (*op->intrinsic == Intrinsic::LastArrival || *op->intrinsic == Intrinsic::AsyncLoad ||
                          *op->intrinsic == Intrinsic::AsyncLoadVector || *op->intrinsic == Intrinsic::LoadVector)) {
      ++addressed_;
      IRVisitor::visit(op);
      --addressed_;
      return;
    }
    IRVisitor::visit(op);
  }
  void visit(const WarpMma *op) override {
    // A target may emit the MMA on its accumulators' addresses.
    ++addressed_;
    IRVisitor::visit(op);
    --addressed_;
  }
  void visit(const Allocate *op) override {
    if (op->name == op_->name)
      plain = false; // shadowed: keep it simple
    IRVisitor::visit(op);
  }
};

// The elements of held arrays that a statement stores to.
class StoredElements : public IRVisitor {
public:
  explicit StoredElements(const RegisterArrays::State &held) : held_(held) {}
  std::set<std::pair<std::string, size_t>> elements;

private:
  using IRVisitor::visit;
  const RegisterArrays::State &held_;
  void visit(const Store *op) override {
    if (held_.count(op->buffer))
      elements.insert({op->buffer, static_cast<size_t>(*constant_index(op->indices))});
    IRVisitor::visit(op);
  }
};

} // namespace

bool RegisterArrays::promotable(const Allocate *op) {
  if (op->memory != MemoryType::Register)
    return false;
  int64_t elements = 1;
  for (const Expr &extent : op->extents) {
    std::optional<int64_t> e = as_const_int(extent);
    if (!e)
      return false;
    elements *= *e;
  }
  CheckAccesses check(op, elements);
  check.visit_stmt(op->body);
  return check.plain;
}

void RegisterArrays::add(const std::string &name, llvm::Type *type, int64_t elements) {
  COALESCE_INTERNAL_ASSERT(!holds(name), "register array '", name, "' allocated twice");
  state_[name].assign(static_cast<size_t>(elements), llvm::UndefValue::get(type));
}

void RegisterArrays::remove(const std::string &name) { state_.erase(name); }

llvm::Value *RegisterArrays::load(const std::string &name, const Expr &index) const {
  return state_.at(name).at(static_cast<size_t>(*as_const_int(index)));
}

void RegisterArrays::store(const std::string &name, const Expr &index, llvm::Value *value) {
  state_.at(name).at(static_cast<size_t>(*as_const_int(index))) = value;
}

void RegisterArrays::join(llvm::IRBuilder<> &builder, const State &a, llvm::BasicBlock *from_a, const State &b,
                          llvm::BasicBlock *from_b) {
  State joined;
  for (const auto &[name, values] : a) {
    auto other = b.find(name);
    if (other == b.end())
      continue; // allocated on one path only: out of scope here
    std::vector<llvm::Value *> merged = values;
    for (size_t e = 0; e < values.size(); ++e) {
      if (values[e] == other->second[e])
        continue;
      llvm::PHINode *phi = builder.CreatePHI(values[e]->getType(), 2);
      phi->addIncoming(values[e], from_a);
      phi->addIncoming(other->second[e], from_b);
      merged[e] = phi;
    }
    joined[name] = std::move(merged);
  }
  state_ = std::move(joined);
}

RegisterArrays::LoopPhis RegisterArrays::open_loop(llvm::IRBuilder<> &builder, llvm::BasicBlock *preheader,
                                                   const Stmt &body) {
  StoredElements stored(state_);
  stored.visit_stmt(body);
  LoopPhis loop;
  for (const auto &element : stored.elements) {
    llvm::Value *&value = state_.at(element.first).at(element.second);
    llvm::PHINode *phi = builder.CreatePHI(value->getType(), 2);
    phi->addIncoming(value, preheader);
    value = phi;
    loop.phis.push_back({element, phi});
  }
  return loop;
}

void RegisterArrays::close_loop(const LoopPhis &loop, llvm::BasicBlock *latch) {
  for (const auto &[element, phi] : loop.phis)
    phi->addIncoming(state_.at(element.first).at(element.second), latch);
}

} // namespace coalesce
