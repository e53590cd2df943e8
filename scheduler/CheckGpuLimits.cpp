#include "scheduler/CheckGpuLimits.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/LoweredFunc.h"
#include "scheduler/SharedTileLayout.h"

#include <algorithm>
#include <map>
#include <set>

namespace coalesce {

namespace {


class Check : public IRVisitor {
public:
  Check(const ResourceBudget &budget, int blocks_per_sm) : budget_(budget), blocks_per_sm_(blocks_per_sm) {}
  void finish() { end_kernel(); }

private:
  using IRVisitor::visit;
  const ResourceBudget &budget_;
  const int blocks_per_sm_; // gpu_min_blocks_per_sm; 0: not capped
  // Per kernel: its threads (every role's), the register arrays' elements
  // per thread, those the warpgroup MMAs accumulate into, and what
  // register reallocation gives the MMA warps (0: none).
  int64_t kernel_threads_ = 0;
  std::map<std::string, int64_t> register_elements_;
  std::set<std::string> accumulators_;
  int64_t reallocated_registers_ = 0;
  std::vector<const For *> gpu_loops_; // enclosing block and thread loops
  std::set<std::string> thread_vars_;
  int64_t shared_bytes_ = 0;
  Stmt kernel_body_; // the kernel's outermost block loop's body
  int64_t largest_bytes_ = 0;
  std::string largest_shared_;
  const For *largest_site_ = nullptr; // the loop the largest buffer is staged at

  // A kernel with warpgroup MMAs runs only on sm_90a, which gives a block
  // up to 227 KiB of shared memory; any other kernel gets the budget every
  // supported target has.
  bool sm90a_only_ = false;
  int64_t shared_limit() const { return sm90a_only_ ? std::max<int64_t>(budget_.shared_bytes, 227 * 1024) : budget_.shared_bytes; }

  void visit(const WarpMma *op) override {
    sm90a_only_ |= is_warpgroup_mma(op->kind);
    if (const auto *store = op->update.as<Store>(); store && is_warpgroup_mma(op->kind))
      accumulators_.insert(store->buffer);
    IRVisitor::visit(op);
  }

  void visit(const Call *op) override {
    if (op->intrinsic && *op->intrinsic == Intrinsic::RegistersIncrease && !op->args.empty())
      reallocated_registers_ = std::max(reallocated_registers_, as_const_int(op->args[0]).value_or(0));
    IRVisitor::visit(op);
  }

  // A warpgroup MMA's accumulators live in registers from the first MMA to
  // the epilogue, all at once: where the launch leaves a thread fewer than
  // they and the rest of the kernel need, ptxas refuses the kernel (C7602,
  // "insufficient registers") or serializes its MMAs (C7511). Checked
  // where the registers per thread are known: with gpu_min_blocks_per_sm.
  // Against the launch's count even where register reallocation gives the
  // MMA warps more: ptxas allocates the whole kernel within the launch's
  // (128 x 128 tiles of two 64 x 128 warpgroups and a producer warpgroup
  // keeping 40 of 80 at two blocks per SM: the MMA warps would get 96, and
  // ptxas refused the kernel, "Insufficient registers (80)").
  void check_accumulator_registers() const {
    if (!sm90a_only_ || blocks_per_sm_ <= 0 || accumulators_.empty() || kernel_threads_ <= 0)
      return;
    int64_t accumulators = 0;
    std::string names;
    for (const std::string &buffer : accumulators_) {
      auto it = register_elements_.find(buffer);
      accumulators += it == register_elements_.end() ? 0 : it->second;
      names += (names.empty() ? "'" : ", '") + buffer + "'";
    }
    const int launch = launch_registers(static_cast<int>(kernel_threads_), blocks_per_sm_);
    if (accumulators + kRegistersBesideAccumulators <= launch)
      return;
    std::string owner = *accumulators_.begin();
    user_error("in schedule for '", owner, "': its warpgroup MMAs keep ", accumulators,
               " f32 accumulators per thread in registers (", names, "), which with the ", kRegistersBesideAccumulators,
               " registers the rest of the kernel needs beside them make ", accumulators + kRegistersBesideAccumulators,
               ", but a block of ", kernel_threads_, " threads (producer warps included) at ", blocks_per_sm_, " block",
               blocks_per_sm_ > 1 ? "s" : "", " per SM (gpu_min_blocks_per_sm) gives each thread ", launch,
               " (65536 / (", kernel_threads_, " x ", blocks_per_sm_, "), a multiple of 8, at most 248)",
               reallocated_registers_ > 0
                   ? str_cat(", which ptxas compiles the whole kernel within, though register reallocation gives "
                             "the MMA warps ",
                             reallocated_registers_, " once it runs")
                   : std::string(),
               ": ask for fewer blocks per SM, fewer producer warps, or smaller warpgroup tiles");
  }

  void end_kernel() {
    check_accumulator_registers();
    // Where the tiles are one dynamic array, those that never live side by
    // side share bytes (SharedTileLayout.h), as the kernel will lay them out.
    if (kernel_body_.defined()) {
      SharedTileLayout layout = lay_out_shared_tiles(kernel_body_, sm90a_only_ ? 1024 : 16);
      if (layout.unshared_bytes > kStaticSharedLimit)
        shared_bytes_ -= layout.unshared_bytes - layout.bytes;
    }
    kernel_body_ = Stmt();
    kernel_threads_ = reallocated_registers_ = 0;
    register_elements_.clear();
    accumulators_.clear();
    if (shared_bytes_ > shared_limit()) {
      std::string site = largest_site_ ? str_cat(", staged at loop '", loop_short_name(largest_site_->name), "'") : "";
      user_error(largest_site_ ? str_cat("in schedule for '", loop_owner(largest_site_->name), "': ") : std::string(),
                 "the kernel's shared memory, ", shared_bytes_, " bytes, is over the budget of ",
                 shared_limit(), " bytes per block; the largest buffer is '", largest_shared_, "' (",
                 largest_bytes_, " bytes", site, "); stage smaller tiles (smaller block tiles or a smaller split of ",
                 "the staging loop)");
    }
    shared_bytes_ = largest_bytes_ = 0;
    largest_site_ = nullptr;
    sm90a_only_ = false;
  }

  // The staging loop under a shared buffer: the first serial loop that is
  // not one of the copies' own (LoopRole::StagingCopy). Not a thread loop:
  // those of the pipeline's barriers and producer warps are named after
  // the barriers ("A_full"), not after the Func that stages; not an
  // unrolled one (the MMA's kk in a peeled first step).
  static const For *staging_loop(const Stmt &body) {
    class First : public IRVisitor {
    public:
      const For *found = nullptr;
      using IRVisitor::visit;
      void visit(const For *op) override {
        if (!found && op->for_kind == ForKind::Serial && op->role != LoopRole::StagingCopy &&
            op->role != LoopRole::EpilogueSteps && op->role != LoopRole::ProducerWarps)
          found = op;
        if (!found)
          IRVisitor::visit(op);
      }
    } first;
    first.visit_stmt(body);
    return first.found;
  }

  // The threads a thread loop's dimension has in the block: its extent, or
  // for producer warps, which run past the other threads of their
  // dimension, that extent past its start. Every role's warps count, the
  // loops inside a producer loop as well as the producer loop itself.
  static int64_t threads_along(const For *op) {
    int64_t threads = *as_const_int(op->extent);
    if (op->role == LoopRole::ProducerWarps)
      threads += *as_const_int(op->min);
    return threads;
  }

  void visit(const For *op) override {
    bool gpu = op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread;
    if (!gpu)
      return IRVisitor::visit(op);
    bool new_kernel = op->for_kind == ForKind::GpuBlock && gpu_loops_.empty();
    for (const For *outer : gpu_loops_) {
      if (op->for_kind == ForKind::GpuBlock && outer->for_kind == ForKind::GpuThread)
        user_error("in schedule for '", loop_owner(op->name), "': loop '", loop_short_name(op->name),
                   "' is mapped to GPU blocks inside thread loop '", loop_short_name(outer->name),
                   "'; block loops must enclose thread loops: reorder so that '", loop_short_name(op->name),
                   "' is outside '", loop_short_name(outer->name), "'");
      if (op->for_kind == outer->for_kind && op->gpu_dim == outer->gpu_dim)
        user_error("in schedule for '", loop_owner(op->name), "': loops '", loop_short_name(outer->name), "' and '",
                   loop_short_name(op->name), "' are both mapped to GPU ",
                   op->for_kind == ForKind::GpuBlock ? "block" : "thread", " dimension ", "xyz"[op->gpu_dim],
                   "; map nested loops in one gpu_blocks/gpu_threads call");
    }
    if (op->for_kind == ForKind::GpuThread) {
      // Threads of the block down to this loop, and of them the producer
      // warps' (the producer loop at its extent, the others at theirs).
      int64_t threads = 1, producer_threads = 1;
      bool producers = false;
      std::vector<const For *> chain;
      for (const For *outer : gpu_loops_)
        if (outer->for_kind == ForKind::GpuThread)
          chain.push_back(outer);
      chain.push_back(op);
      for (const For *loop : chain) {
        threads *= threads_along(loop);
        producer_threads *= *as_const_int(loop->extent);
        producers |= loop->role == LoopRole::ProducerWarps;
      }
      kernel_threads_ = std::max(kernel_threads_, threads);
      if (threads > budget_.max_threads_per_block)
        user_error("in schedule for '", loop_owner(op->name), "': the thread loops down to '", loop_short_name(op->name),
                   "' make ", threads, " threads per block",
                   producers ? str_cat(", ", producer_threads, " of them producer warps (ProducerWarps)")
                             : std::string(),
                   ", more than the limit of ", budget_.max_threads_per_block,
                   producers ? "; use fewer producer warps, or fewer MMA warps (larger warp tiles)"
                             : "; use smaller thread tiles or give each thread a larger register block");
      thread_vars_.insert(op->name);
    }
    if (new_kernel)
      kernel_body_ = op->body;
    gpu_loops_.push_back(op);
    IRVisitor::visit(op);
    gpu_loops_.pop_back();
    if (new_kernel)
      end_kernel();
  }

  void visit(const Allocate *op) override {
    int64_t elements = 1;
    for (const Expr &extent : op->extents)
      elements *= as_const_int(extent).value_or(1);
    if (op->memory == MemoryType::Shared) {
      shared_bytes_ += elements * op->type.bytes();
      if (elements * op->type.bytes() > largest_bytes_) {
        largest_bytes_ = elements * op->type.bytes();
        largest_shared_ = op->name;
        largest_site_ = staging_loop(op->body);
      }
    }
    if (op->memory == MemoryType::Register) {
      // Dimensions indexed by thread loops are spread over threads.
      class ThreadDims : public IRVisitor {
      public:
        ThreadDims(const std::string &b, const Allocate *a) : buffer(b), alloc(a) {}
        const std::string &buffer;
        const Allocate *alloc;
        std::map<size_t, bool> per_dim;
        std::map<size_t, std::string> loop_of_dim; // the loop indexing each dimension, if one does
        std::set<std::string> threads;
        using IRVisitor::visit;
        void visit(const For *op) override {
          if (op->for_kind == ForKind::GpuThread)
            threads.insert(op->name);
          IRVisitor::visit(op);
        }
        void visit(const Store *op) override {
          IRVisitor::visit(op);
          if (op->buffer != buffer)
            return;
          for (size_t d = 0; d < op->indices.size(); ++d) {
            const auto *var = op->indices[d].as<Variable>();
            bool thread = var && threads.count(var->name);
            per_dim[d] = per_dim.count(d) ? per_dim[d] && thread : thread;
            if (var && !loop_of_dim.count(d))
              loop_of_dim[d] = loop_short_name(var->name);
          }
        }
      } dims(op->name, op);
      dims.visit_stmt(op->body);
      int64_t per_thread = 1;
      std::string loops;
      for (size_t d = 0; d < op->extents.size(); ++d)
        if (!dims.per_dim[d]) {
          per_thread *= as_const_int(op->extents[d]).value_or(1);
          loops += (loops.empty() ? "" : " x ") +
                   (dims.loop_of_dim.count(d) ? "'" + dims.loop_of_dim[d] + "'" : std::string("?"));
        }
      register_elements_[op->name] = per_thread;
      if (per_thread > budget_.register_elements_per_thread)
        user_error("in schedule for '", op->name, "': each thread holds ", per_thread, " elements of '", op->name,
                   "' in registers (loops ", loops, "), over the budget of ", budget_.register_elements_per_thread,
                   "; use a smaller register block");
    }
    IRVisitor::visit(op);
  }
};

} // namespace

void check_gpu_limits(const Stmt &s, const ResourceBudget &budget, int blocks_per_sm) {
  Check check(budget, blocks_per_sm);
  check.visit_stmt(s);
  check.finish();
}

} // namespace coalesce
