#include "scheduler/FuseGpuThreadLoops.h"

#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/SharedTileLayout.h"
#include "scheduler/SplitWarpRoles.h"

#include <map>
#include <set>

namespace coalesce {

namespace {

Expr gpu_index(Intrinsic index) { return Call::make_intrinsic(index, Int(32), {}); }

// The block size, and which allocations' dimensions are per-thread.
class ScanKernel : public IRVisitor {
public:
  std::array<int, 3> block{{1, 1, 1}};
  std::map<int, std::string> first_loop_of_dim;
  std::set<std::string> thread_vars;
  std::map<std::string, std::map<size_t, bool>> thread_dims; // register buffer -> dim -> all accesses by thread var
  std::set<std::string> registers;
  int shared_bytes = 0;
  int shared_alignment = 16;
  bool has_threads = false;

private:
  using IRVisitor::visit;
  int thread_depth_ = 0;

  void visit(const For *op) override {
    if (op->for_kind == ForKind::GpuBlock)
      user_error("in schedule for '", loop_owner(op->name), "': loop '", loop_short_name(op->name),
                 "' is mapped to GPU blocks but is not among the outermost loops of its kernel; make the block loops "
                 "the outermost loops");
    if (op->for_kind != ForKind::GpuThread)
      return IRVisitor::visit(op);
    int extent = static_cast<int>(*as_const_int(op->extent));
    if (op->role == LoopRole::ProducerWarps) {
      // Threads past the others' in this dimension (dsl/IR.h, LoopRole).
      auto known = producer_threads.find(op->gpu_dim);
      COALESCE_INTERNAL_ASSERT(known == producer_threads.end() || known->second == extent,
                               "producer warp loops of one kernel disagree on their threads");
      producer_threads[op->gpu_dim] = extent;
      thread_vars.insert(op->name);
      ++thread_depth_;
      IRVisitor::visit(op);
      --thread_depth_;
      return;
    }
    auto first = first_loop_of_dim.find(op->gpu_dim);
    if (first != first_loop_of_dim.end() && block[op->gpu_dim] != extent)
      user_error("the thread loops of one kernel must agree on each dimension: '", loop_short_name(first->second), "' of '",
                 loop_owner(first->second), "' has ", block[op->gpu_dim], " threads in ", "xyz"[op->gpu_dim], " but '",
                 loop_short_name(op->name), "' of '", loop_owner(op->name), "' has ", extent,
                 "; give them the same thread tiling");
    first_loop_of_dim.emplace(op->gpu_dim, op->name);
    block[op->gpu_dim] = extent;
    has_threads = true;
    thread_vars.insert(op->name);
    ++thread_depth_;
    IRVisitor::visit(op);
    --thread_depth_;
  }
  void note_access(const std::string &buffer, const std::vector<Expr> &indices) {
    if (!registers.count(buffer))
      return;
    auto &dims = thread_dims[buffer];
    for (size_t d = 0; d < indices.size(); ++d) {
      const auto *var = indices[d].as<Variable>();
      bool thread = var && thread_vars.count(var->name);
      if (dims.count(d) && dims[d] != thread)
        user_error("register buffer '", buffer, "' is indexed in dimension ", d,
                   " by a thread loop in one place and not in another, so threads would need each other's "
                   "registers; compute it over the same thread loops as its consumer");
      dims[d] = thread;
    }
  }
  void visit(const Store *op) override {
    if (thread_depth_ == 0 && has_threads_anywhere)
      user_error("the store to '", op->buffer, "' is outside every gpu_threads loop of its kernel, so every thread "
                 "would run it; map a loop around it to GPU threads");
    note_access(op->buffer, op->indices);
    IRVisitor::visit(op);
  }
  void visit(const Load *op) override {
    note_access(op->buffer, op->indices);
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    // last_arrival answers every thread of the block through one shared
    // word (codegen/CodeGenPTX.cpp), counted here, 16-byte rounded like a
    // tile, so that a kernel whose tiles fill the static limit exactly
    // moves them to dynamic shared memory instead of going past it.
    if (op->intrinsic == Intrinsic::LastArrival)
      counted_arrival_ = true;
    IRVisitor::visit(op);
  }
  bool counted_arrival_ = false;
  void visit(const Allocate *op) override {
    if (op->memory == MemoryType::Register || op->memory == MemoryType::Auto)
      registers.insert(op->name);
    if (op->memory == MemoryType::Heap) // root Funcs are rejected before; this one is inside a kernel
      user_error("'", op->name, "' is computed inside the kernel but stored in heap memory, which a GPU kernel cannot "
                 "allocate; store it in registers or shared memory (store_in), on a tile of constant size (compute it "
                 "at a loop whose inner loops have constant extents)");
    if (op->memory == MemoryType::Shared) {
      int64_t elements = 1;
      for (const Expr &e : op->extents)
        elements *= *as_const_int(e);
      tile_bytes.push_back(elements * op->type.bytes());
    }
    IRVisitor::visit(op);
  }
  void visit(const WarpMma *op) override {
    if (is_warpgroup_mma(op->kind))
      shared_alignment = 1024;
    IRVisitor::visit(op);
  }
  std::vector<int64_t> tile_bytes;

public:
  std::map<int, int> producer_threads; ///< dimension -> threads of the producer loops past the others
  std::array<int, 3> others{{1, 1, 1}}; ///< the block of the other thread loops

  // The block grows by the producer warps' threads.
  void add_producers() {
    others = block;
    for (const auto &[dim, threads] : producer_threads) {
      COALESCE_INTERNAL_ASSERT(first_loop_of_dim.count(dim), "producer warps extend dimension ", "xyz"[dim],
                               ", which no other thread loop uses");
      block[dim] += threads;
    }
  }

  // Each tile rounded up to the alignment, as the code generator lays them
  // out (in dynamic shared memory, one after another).
  void total_shared() {
    shared_bytes = 0;
    for (int64_t bytes : tile_bytes)
      shared_bytes += static_cast<int>((bytes + shared_alignment - 1) / shared_alignment * shared_alignment);
    if (counted_arrival_)
      shared_bytes += 16; // last_arrival's word (visit(const Call *))
  }

public:
  bool has_threads_anywhere = false;
};

class HasThreads : public IRVisitor {
public:
  bool found = false;
  using IRVisitor::visit;
  void visit(const For *op) override {
    found |= op->for_kind == ForKind::GpuThread;
    IRVisitor::visit(op);
  }
};

// Replaces thread loops by thread indices and drops per-thread dimensions.
class FuseThreads : public IRMutator {
public:
  explicit FuseThreads(const ScanKernel &scan) : scan_(scan) {}

private:
  using IRMutator::visit;
  const ScanKernel &scan_;

  std::vector<Expr> keep(const std::string &buffer, const std::vector<Expr> &indices) {
    auto it = scan_.thread_dims.find(buffer);
    if (it == scan_.thread_dims.end())
      return indices;
    std::vector<Expr> kept;
    for (size_t d = 0; d < indices.size(); ++d)
      if (!it->second.at(d))
        kept.push_back(indices[d]);
    return kept;
  }
  Stmt visit(const For *op, const Stmt &self) override {
    if (op->for_kind != ForKind::GpuThread)
      return IRMutator::visit(op, self);
    Expr tid = gpu_index(thread_id_intrinsic(op->gpu_dim));
    int others = scan_.others[op->gpu_dim];
    if (op->role == LoopRole::ProducerWarps) {
      // Threads others .. others + extent - 1 run it, as min .. min + extent - 1.
      Stmt body = LetStmt::make(op->name, tid - others + op->min, mutate(op->body));
      return IfThenElse::make(on_producer_warps(op->gpu_dim, others), body);
    }
    Stmt body = LetStmt::make(op->name, tid + op->min, mutate(op->body));
    if (scan_.producer_threads.count(op->gpu_dim))
      return IfThenElse::make(on_other_warps(op->gpu_dim, others), body);
    return body;
  }
  Stmt visit(const Allocate *op, const Stmt &self) override {
    Stmt body = mutate(op->body);
    auto it = scan_.thread_dims.find(op->name);
    std::vector<Expr> extents;
    for (size_t d = 0; d < op->extents.size(); ++d)
      if (it == scan_.thread_dims.end() || !it->second.count(d) || !it->second.at(d))
        extents.push_back(op->extents[d]);
    MemoryType memory = op->memory == MemoryType::Auto ? MemoryType::Register : op->memory;
    return Allocate::make(op->name, op->type, memory, extents, body, op->staged_input);
  }
  Stmt visit(const Store *op, const Stmt &self) override {
    Stmt s = IRMutator::visit(op, self);
    const auto *store = s.as<Store>();
    return Store::make(store->buffer, keep(store->buffer, store->indices), store->value);
  }
  Expr visit(const Load *op, const Expr &self) override {
    Expr e = IRMutator::visit(op, self);
    const auto *load = e.as<Load>();
    return Load::make(load->type, load->buffer, keep(load->buffer, load->indices));
  }
};

GpuKernel make_kernel(const Stmt &nest, const std::string &name) {
  GpuKernel kernel;
  kernel.name = name;
  kernel.grid = {Expr(1), Expr(1), Expr(1)};
  std::vector<const For *> block_loops;
  Stmt body = nest;
  while (const auto *loop = body.as<For>()) {
    if (loop->for_kind != ForKind::GpuBlock)
      break;
    block_loops.push_back(loop);
    kernel.grid[loop->gpu_dim] = loop->extent;
    kernel.block_loops[loop->gpu_dim] = loop->name;
    body = loop->body;
  }
  if (block_loops.empty()) {
    const auto *loop = nest.as<For>();
    user_error("on the GPU, each loop nest of the output must start with loops mapped to GPU blocks; ",
               loop ? str_cat("loop '", loop_short_name(loop->name), "' of '", loop_owner(loop->name), "' is ",
                              for_kind_name(loop->for_kind), ": map it with gpu_blocks")
                    : std::string("a statement runs outside every loop"));
  }
  ScanKernel scan;
  HasThreads threads;
  threads.visit_stmt(body);
  scan.has_threads_anywhere = threads.found;
  scan.visit_stmt(body);
  scan.add_producers();
  scan.total_shared();
  kernel.block = scan.block;
  kernel.shared_bytes = scan.shared_bytes;
  kernel.shared_alignment = scan.shared_alignment;
  kernel.dynamic_shared = scan.shared_bytes > kStaticSharedLimit;
  if (kernel.dynamic_shared) {
    SharedTileLayout layout = lay_out_shared_tiles(nest, scan.shared_alignment);
    kernel.shared_offsets = layout.offsets;
    kernel.shared_bytes -= static_cast<int>(layout.unshared_bytes - layout.bytes);
  }
  body = FuseThreads(scan).mutate(body);
  COALESCE_INTERNAL_ASSERT(scan.producer_threads.size() <= 1, "producer warps in more than one GPU dimension");
  for (const auto &[dim, threads] : scan.producer_threads)
    body = split_warp_roles(body, dim, scan.others[dim], scan.others[0] * scan.others[1] * scan.others[2]);
  for (auto loop = block_loops.rbegin(); loop != block_loops.rend(); ++loop)
    body = LetStmt::make((*loop)->name, gpu_index(block_id_intrinsic((*loop)->gpu_dim)) + (*loop)->min, body);
  kernel.body = body;
  return kernel;
}

} // namespace

std::vector<GpuKernel> fuse_gpu_thread_loops(const Stmt &s, const std::string &name) {
  std::vector<Stmt> nests;
  if (const auto *block = s.as<Block>())
    nests = block->stmts;
  else
    nests = {s};
  std::vector<GpuKernel> kernels;
  size_t computing = 0; // kernels that are not padded copies
  for (const Stmt &nest : nests) {
    if (const auto *alloc = nest.as<Allocate>())
      user_error("'", alloc->name, "' is computed at root, which on the GPU would need its own kernel and a buffer in "
                 "global memory; compute it inside the output's kernel instead (compute_at or fuse_epilogue)");
    // A padded copy's kernel is named after its buffer (out_A_padded), and
    // split_k's combine as such (out_combine), so the output's first kernel
    // keeps the output's name.
    const auto *loop = nest.as<For>();
    const LoopRole role = loop ? loop->role : LoopRole::Schedule;
    std::string kernel_name = role == LoopRole::PaddedCopy
                                  ? str_cat(name, "_", loop->name.substr(0, loop->name.find('.')))
                              : role == LoopRole::SliceCombine ? str_cat(name, "_combine")
                              : computing++ == 0               ? name
                                                               : str_cat(name, "_", computing - 1);
    kernels.push_back(make_kernel(nest, kernel_name));
    // The combine reads only what the kernel before it wrote.
    if (role == LoopRole::SliceCombine)
      kernels.back().start = KernelStart::DuringPreviousTail;
  }
  return kernels;
}

} // namespace coalesce
