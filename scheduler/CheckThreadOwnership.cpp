#include "scheduler/CheckThreadOwnership.h"

#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"

#include <map>
#include <vector>

namespace coalesce {

namespace {

// Which thread owns an index: the GPU dimension of the thread loop that is
// the index, kNone for an index no thread loop appears in, kMixed for one
// computed from thread loops (no single thread dimension owns it).
constexpr int kNone = -1, kMixed = -2;

class MentionsAny : public IRVisitor {
public:
  explicit MentionsAny(const std::map<std::string, const For *> &vars) : vars_(vars) {}
  bool found = false;

private:
  using IRVisitor::visit;
  void visit(const Variable *op) override { found |= vars_.count(op->name) != 0; }
  const std::map<std::string, const For *> &vars_;
};

struct Access {
  std::vector<int> owner;
  std::vector<std::string> loop; // the thread loop per dimension, or ""
};

class Check : public IRVisitor {
public:
  explicit Check(const Environment &env) : env_(env) {}

private:
  using IRVisitor::visit;
  const Environment &env_;
  int block_depth_ = 0;
  std::map<std::string, const For *> threads_; // enclosing thread loops by name
  std::vector<const For *> thread_stack_;       // the same, outermost first
  std::map<std::string, Access> first_;        // per buffer: its first access
  std::map<std::string, bool> tracked_;        // buffers of Funcs allocated in a kernel

  void visit(const For *op) override {
    block_depth_ += op->for_kind == ForKind::GpuBlock;
    bool thread = op->for_kind == ForKind::GpuThread;
    if (thread) {
      threads_[op->name] = op;
      thread_stack_.push_back(op);
    }
    IRVisitor::visit(op);
    if (thread) {
      threads_.erase(op->name);
      thread_stack_.pop_back();
    }
    block_depth_ -= op->for_kind == ForKind::GpuBlock;
  }
  void visit(const Allocate *op) override {
    bool track = block_depth_ > 0 && env_.find(op->name) != nullptr;
    // Shared memory is one tile per block, however deep the allocation
    // sits: inside a thread loop every thread of that loop writes the same
    // tile at once on the GPU, while the serial run gives each iteration
    // the tile to itself (a Func computed at a thread loop and stored in
    // shared memory).
    if (track && op->memory == MemoryType::Shared && !thread_stack_.empty()) {
      const For *outer = thread_stack_.front();
      user_error("'", op->name, "' is stored in shared memory, which a GPU block holds once for all its threads, "
                 "but it is computed inside thread loop '", loop_short_name(outer->name), "' of '",
                 loop_owner(outer->name), "' (thread ", "xyz"[outer->gpu_dim],
                 "), so every thread of that loop would write the one tile at the same time. Compute '", op->name,
                 "' at a loop outside the thread loops (a block loop), or store it in registers "
                 "(store_in(MemoryType::Register)), where each thread keeps its own");
    }
    if (track)
      tracked_[op->name] = true;
    IRVisitor::visit(op);
    if (track) {
      tracked_.erase(op->name);
      first_.erase(op->name);
    }
  }
  void note(const std::string &buffer, const std::vector<Expr> &indices) {
    if (!tracked_.count(buffer))
      return;
    Access access;
    for (const Expr &index : indices) {
      const auto *var = index.as<Variable>();
      auto loop = var ? threads_.find(var->name) : threads_.end();
      if (loop != threads_.end()) {
        access.owner.push_back(loop->second->gpu_dim);
        access.loop.push_back(loop->first);
        continue;
      }
      MentionsAny mentions(threads_);
      mentions.visit_expr(index);
      access.owner.push_back(mentions.found ? kMixed : kNone);
      access.loop.push_back(mentions.found ? to_string(index) : "");
    }
    auto [it, first] = first_.emplace(buffer, access);
    if (first)
      return;
    const Access &was = it->second;
    for (size_t d = 0; d < indices.size() && d < was.owner.size(); ++d) {
      if (was.owner[d] == access.owner[d] && was.owner[d] != kMixed)
        continue;
      auto describe = [](int owner, const std::string &loop) {
        if (owner == kNone)
          return std::string("by no thread loop");
        if (owner == kMixed)
          return str_cat("by ", loop, ", computed from thread loops");
        return str_cat("by thread loop '", loop_short_name(loop), "' of '", loop_owner(loop), "' (thread ",
                       "xyz"[owner], ")");
      };
      user_error("'", buffer, "' is computed inside a GPU kernel and indexed in dimension ", d, " ",
                 describe(was.owner[d], was.loop[d]), " in one place and ", describe(access.owner[d], access.loop[d]),
                 " in another, so a thread would read values another thread computed (on the GPU each thread keeps ",
                 "only its own part of the tile). Give '", buffer, "' the thread mapping of the Func that reads it: ",
                 "map its loops on the consumer only, before compute_at or fuse_epilogue");
    }
  }
  void visit(const Store *op) override {
    IRVisitor::visit(op);
    note(op->buffer, op->indices);
  }
  void visit(const Load *op) override {
    IRVisitor::visit(op);
    note(op->buffer, op->indices);
  }
};

} // namespace

void check_thread_ownership(const Stmt &s, const Environment &env) { Check(env).visit_stmt(s); }

} // namespace coalesce
