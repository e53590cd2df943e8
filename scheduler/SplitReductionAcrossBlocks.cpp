#include "scheduler/SplitReductionAcrossBlocks.h"

#include "dsl/Error.h"
#include "dsl/IREquality.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/LoopNames.h"
#include "scheduler/Simplify.h"
#include "scheduler/SplitKSlices.h"

#include <optional>
#include <set>

namespace coalesce {

namespace {

Expr var(const std::string &name) { return Variable::make(Int(32), name); }

// The one element of the producer the consumer's store reads (Funcs call
// each other at the caller's own coordinates, so every read is alike).
class FindProducerLoad : public IRVisitor {
public:
  explicit FindProducerLoad(const std::string &producer) : producer_(producer) {}
  Expr load;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    if (op->buffer == producer_) {
      Expr found = Load::make(op->type, op->buffer, op->indices);
      COALESCE_INTERNAL_ASSERT(!load.defined() || equal(load, found), "the epilogue reads '", producer_,
                               "' at two places: ", to_string(load), " and ", to_string(found));
      load = found;
    }
    IRVisitor::visit(op);
  }
  const std::string producer_;
};

// Rewrites each store of the output in the consumer's loops by `rewrite`,
// given the store and the producer element it reads.
template <typename Rewrite> class RewriteOutputStores : public IRMutator {
public:
  RewriteOutputStores(const std::string &output, const std::string &producer, Rewrite rewrite)
      : output_(output), producer_(producer), rewrite_(rewrite) {}

private:
  using IRMutator::visit;
  Stmt visit(const Store *op, const Stmt &self) override {
    if (op->buffer != output_)
      return self;
    FindProducerLoad find(producer_);
    find.visit_expr(op->value);
    COALESCE_INTERNAL_ASSERT(find.load.defined(), "the store of '", output_, "' does not read '", producer_, "'");
    return rewrite_(op, find.load);
  }
  const std::string output_, producer_;
  Rewrite rewrite_;
};

template <typename Rewrite>
Stmt rewrite_output_stores(const Stmt &s, const std::string &output, const std::string &producer, Rewrite rewrite) {
  return RewriteOutputStores<Rewrite>(output, producer, rewrite).mutate(s);
}

// Slice 0 starts from the producer's initial value (a folded bias, say),
// the others from 0, so that the initial value is added once. The initial
// stores are the producer's stores outside its reduction loops.
class StartSlicesFromZero : public IRMutator {
public:
  StartSlicesFromZero(const std::string &producer, Expr first_slice)
      : producer_(producer), first_slice_(std::move(first_slice)) {}

private:
  using IRMutator::visit;
  int reduction_depth_ = 0;
  Stmt visit(const For *op, const Stmt &self) override {
    bool reduction = op->reduces(producer_);
    reduction_depth_ += reduction;
    Stmt result = IRMutator::visit(op, self);
    reduction_depth_ -= reduction;
    return result;
  }
  Stmt visit(const Store *op, const Stmt &self) override {
    const auto *zero = op->value.as<FloatImm>();
    if (op->buffer != producer_ || reduction_depth_ > 0 || (zero && zero->value == 0.0) || is_const(op->value, 0))
      return self;
    return Store::make(op->buffer, op->indices,
                       select(first_slice_, op->value, make_zero(op->value.type())));
  }
  const std::string producer_;
  Expr first_slice_;
};

// The guards of the output's edge dropped: an if without an else whose
// condition is a conjunction of `index < extent`, each an index of the
// output's stores against the domain's extent in that dimension (i < M, j <
// N). Other guards (a split's tail inside the tile, which keeps the
// producer's indices inside its allocation) stay.
class DropEdgeGuards : public IRMutator {
public:
  DropEdgeGuards(const std::string &output, const std::vector<Expr> &domain) : output_(output), domain_(domain) {}

private:
  using IRMutator::visit;
  Stmt visit(const IfThenElse *op, const Stmt &self) override {
    if (op->else_case.defined() || !on_edge(op->condition, op->then_case))
      return IRMutator::visit(op, self);
    return mutate(op->then_case);
  }

  bool on_edge(const Expr &condition, const Stmt &body) const {
    if (const auto *both = condition.as<And>())
      return on_edge(both->a, body) && on_edge(both->b, body);
    const auto *less = condition.as<LT>();
    if (!less)
      return false;
    class OutputIndices : public IRVisitor {
    public:
      OutputIndices(const std::string &output, const LT *less, const std::vector<Expr> &domain)
          : output_(output), less_(less), domain_(domain) {}
      bool matches = false, other = false;

    private:
      using IRVisitor::visit;
      void visit(const Store *op) override {
        if (op->buffer == output_) {
          bool here = false;
          for (size_t d = 0; d < op->indices.size() && d < domain_.size(); ++d)
            here |= equal(op->indices[d], less_->a) && equal(simplify(domain_[d]), simplify(less_->b));
          (here ? matches : other) = true;
        }
        IRVisitor::visit(op);
      }
      const std::string &output_;
      const LT *less_;
      const std::vector<Expr> &domain_;
    } find(output_, less, domain_);
    find.visit_stmt(body);
    return find.matches && !find.other;
  }

  const std::string output_;
  const std::vector<Expr> &domain_;
};

// The buffers `s` stores into.
std::set<std::string> stored_buffers(const Stmt &s) {
  class FindStores : public IRVisitor {
  public:
    std::set<std::string> buffers;

  private:
    using IRVisitor::visit;
    void visit(const Store *op) override {
      buffers.insert(op->buffer);
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.buffers;
}

// Whether every store in `s` is to `buffer`.
bool only_stores(const Stmt &s, const std::string &buffer) {
  std::set<std::string> buffers = stored_buffers(s);
  return buffers.empty() || (buffers.size() == 1 && *buffers.begin() == buffer);
}

// The thread loops of `s` (qualified names).
std::set<std::string> thread_loops(const Stmt &s) {
  class FindThreadLoops : public IRVisitor {
  public:
    std::set<std::string> loops;

  private:
    using IRVisitor::visit;
    void visit(const For *op) override {
      if (op->for_kind == ForKind::GpuThread)
        loops.insert(op->name);
      IRVisitor::visit(op);
    }
  } find;
  find.visit_stmt(s);
  return find.loops;
}

// PartialsLayout::ByRegister's index of the producer's element `element`
// (a load of its allocation, of extents `extents`) in its tile's slice:
// the allocation's dimensions as one index, those a thread loop of the
// consumer's nest indexes innermost, in their order (lanes fastest), the
// others outside them, in theirs. A permutation of the allocation's own
// order, so every element has a place of its own whatever the indices are.
Expr register_order_index(const Load *element, const std::vector<Expr> &extents, const std::set<std::string> &threads) {
  COALESCE_INTERNAL_ASSERT(element->indices.size() == extents.size(), "the producer '", element->buffer,
                           "' is read with ", element->indices.size(), " indices but allocated with ", extents.size());
  auto by_thread = [&](size_t d) {
    const auto *v = element->indices[d].as<Variable>();
    return v && threads.count(v->name) > 0;
  };
  Expr index = 0;
  for (bool thread : {false, true})
    for (size_t d = 0; d < extents.size(); ++d)
      if (by_thread(d) == thread)
        index = index * extents[d] + element->indices[d];
  return simplify(index);
}

// The statement at the fuse site: the slice loop around the producer's
// allocation, its `produce` (init and slice of the sum), the partial
// stores, the arrival and the combine with the consumer's `consume` (the
// site's original body). `block_loops` are the block loops outside the
// site (qualified names), outermost first; `partial_tile` the tile's index
// in PartialsLayout::ByRegister's workspace, one per block loop.
Stmt split_reduction_site(const Environment &env, const FuncContents &producer, MemoryType memory,
                          const std::vector<Expr> &buffer_extents, const Stmt &produce, const Stmt &consume,
                          const std::vector<std::string> &block_loops, const std::vector<Expr> &partial_tile) {
  const FuncContents &consumer = env.output();
  const SplitReduction &split = consumer.schedule.split_k;
  const std::string partials = partials_name(producer.name);
  Expr slice = var(slice_loop_name(consumer));
  bool atomic = !split_keeps_slices_apart(split.mode);
  // Under split_k_tail a whole tile (one slice) keeps its sums in its
  // registers: no partial stores, no combine, an arrival of its own.
  Expr count = slice_count(consumer);
  auto when_split = [&](const Stmt &st) { return split.splits_tail_only() ? IfThenElse::make(count > 1, st) : st; };
  const bool by_register = partials_layout(split.mode) == PartialsLayout::ByRegister;
  const std::set<std::string> threads = by_register ? thread_loops(consume) : std::set<std::string>();
  // Where slice `s`'s partial sum of the element the output's store `store`
  // reads (`element`, the producer's) lies.
  auto partial_index = [&](const Store *store, const Expr &element, const Expr &s) {
    std::vector<Expr> index;
    if (by_register) {
      index = partial_tile;
      index.push_back(s);
      index.push_back(register_order_index(element.as<Load>(), buffer_extents, threads));
      return index;
    }
    if (!atomic)
      index.push_back(s);
    index.insert(index.end(), store->indices.begin(), store->indices.end());
    return index;
  };
  // The slice-by-slice combine (below) reads every element of the tile.
  // The partial stores keep the output's edge guards even so: by register,
  // storing the elements past the edge took tf32 16x4096x4096's kernel from
  // 128 to 187 registers and 0.048 to 0.063 ms on an H100; the combine reads a
  // stored element in their place instead.
  const bool by_slice = !atomic && only_stores(consume, consumer.name);
  Stmt unguarded = by_slice ? DropEdgeGuards(consumer.name, env.domain).mutate(consume) : Stmt();

  // Each slice's partial sums, where the epilogue would have stored.
  Stmt store_partials =
      rewrite_output_stores(consume, consumer.name, producer.name, [&](const Store *store, const Expr &element) {
        Expr value = atomic ? Call::make_intrinsic(Intrinsic::AtomicAdd, element.type(), {element}) : element;
        return Store::make(partials, partial_index(store, element, slice), value);
      });
  Stmt slice_produce = StartSlicesFromZero(producer.name, slice == 0).mutate(produce);
  store_partials = when_split(store_partials);
  // The slice loop (GPU z); under split_k_tail the slice is a value of the
  // tail loop's work unit instead (SplitAtSite).
  auto slice_loop = [&](const std::vector<Stmt> &steps) {
    Stmt body = Allocate::make(producer.name, producer.type, memory, buffer_extents, Block::make(steps));
    if (split.splits_tail_only())
      return body;
    return For::make(slice_loop_name(consumer), 0, split.slices, ForKind::GpuBlock, body, 2);
  };
  // A kernel of its own combines the slices (scheduler/CombineSlicesKernel.h).
  if (!split_counts_arrivals(split.mode))
    return slice_loop({slice_produce, store_partials});

  // The combine, in slice order, into the producer's registers; then the
  // epilogue as the consumer wrote it.
  auto read_slice = [&](const Store *store, const Expr &element, const Expr &s) {
    return Load::make(element.type(), partials, partial_index(store, element, s));
  };
  // Under the slice loop's own name ("out.s0.kz.kz_sum", printed kz_sum):
  // a consumer's loop is "out.s0.<name>", so no loop the user named (kz_sum,
  // say, around this one) can be captured by it.
  const std::string sum_loop = slice_loop_name(consumer) + "." + split.slice_var + "_sum";
  Stmt combine;
  if (by_slice) {
    // Slice by slice over the whole tile: every element's load of one slice
    // is in flight at once, so the combine waits for the memory once per
    // slice. Each element still sums the slices in order (the same bits).
    // Without the guards of the output's edge, which would put a branch
    // between one element's load and the next: an element of the tile past
    // the edge reads the tile's first partial sum (by register) or the
    // nearest one (by element: every index clamped into the domain) into
    // its own register, and the epilogue, still guarded, never stores it.
    auto from_slice = [&](const Expr &s) {
      return rewrite_output_stores(unguarded, consumer.name, producer.name, [&](const Store *store,
                                                                                const Expr &element) {
        const auto *load = element.as<Load>();
        Expr partial;
        if (by_register) {
          // Past the output's edge the element was never stored: it reads
          // the tile's first element instead (inside the output, as every
          // tile's first element is), one address for all of them.
          Expr inside;
          for (size_t d = 0; d < store->indices.size(); ++d) {
            Expr here = store->indices[d] < env.domain[d];
            inside = inside.defined() ? (inside && here) : here;
          }
          std::vector<Expr> index = partial_index(store, element, s);
          index.back() = select(inside, index.back(), 0);
          partial = Load::make(element.type(), partials, index);
        } else {
          std::vector<Expr> index = {s};
          for (size_t d = 0; d < store->indices.size(); ++d)
            index.push_back(clamp(store->indices[d], 0, env.domain[d] - 1));
          partial = Load::make(element.type(), partials, index);
        }
        return Store::make(producer.name, load->indices, is_const(s, 0) ? partial : element + partial);
      });
    };
    std::vector<Stmt> passes = {from_slice(0)};
    if (split.slices > 1)
      passes.push_back(For::make(sum_loop, 1, split.slices - 1, ForKind::Serial, from_slice(var(sum_loop)), -1, {},
                                 LoopRole::SliceSum));
    combine = Block::make({when_split(Block::make(passes)), consume});
  } else {
    // Element by element: where the consumer's nest stores more than the
    // output, each of its statements runs once.
    combine = rewrite_output_stores(consume, consumer.name, producer.name, [&](const Store *store,
                                                                                const Expr &element) {
      const auto *load = element.as<Load>();
      std::vector<Stmt> steps;
      if (atomic) {
        // The total, then the tile zeroed again for the next launch.
        steps.push_back(Store::make(producer.name, load->indices, read_slice(store, element, slice)));
        steps.push_back(Store::make(partials, partial_index(store, element, slice), make_zero(element.type())));
      } else {
        steps.push_back(Store::make(producer.name, load->indices, read_slice(store, element, 0)));
        if (split.slices > 1)
          steps.push_back(For::make(sum_loop, 1, split.slices - 1, ForKind::Serial,
                                    Store::make(producer.name, load->indices,
                                                element + read_slice(store, element, var(sum_loop)))));
      }
      return Block::make({when_split(Block::make(steps)), Store::make(store->buffer, store->indices, store->value)});
    });
  }

  std::vector<Expr> tile;
  for (const std::string &loop : block_loops)
    tile.push_back(var(loop));
  Expr counter = Load::make(Int(32), counters_name(producer.name), tile);
  // "out.s0.kz.last" (printed last), for the same reason: as "out.s0.last"
  // it hid a block loop of 'out' named last from the epilogue under it.
  std::string last = slice_loop_name(consumer) + ".last";
  Stmt arrive = LetStmt::make(last, Call::make_intrinsic(Intrinsic::LastArrival, Int(32), {counter, count}),
                              IfThenElse::make(var(last) == 1, combine));

  return slice_loop({slice_produce, store_partials, arrive});
}

// The tail loop's work units under split_k_tail: over [min, min + T * S +
// R0) instead of [min, min + R), each of the last T = min(tail_iterations,
// R) iterations S times first, once per slice, then the R0 = R - T whole
// iterations. The loop's own index and the slice are values of the unit,
// bound at the top of the fuse site's body (every loop down to the site is
// a block loop, directly nested, so nothing between reads them).
//
// The slices first, not last: the GPU starts blocks roughly in order, and
// whatever order the blocks are started in, the short units must not be
// what holds the whole tiles back. Started last, they fill the last wave
// only where nothing reorders the units; gpu_block_groups walks a group's
// rows column by column, which put whole tiles of the last group between
// them (1536 x 8960 x 1536: 4 tile times for the 3.5 the split should
// give, docs/performance.md). Started first, they run beside the first
// wave's whole tiles, and the whole tiles after them fill the rest of the
// grid, in any grouping.
struct TailUnits {
  std::string loop, units;
  Expr min, whole, tail_units;

  TailUnits(const For *op, const FuncContents &consumer) : loop(op->name), units(op->name + "_units"), min(op->min) {
    Expr tail = split_iterations(consumer, op->name, op->extent);
    whole = simplify(op->extent - tail);
    tail_units = simplify(tail * consumer.schedule.split_k.slices);
  }
  Expr extent() const { return simplify(whole + tail_units); }
  // let <loop>, <slice>, <slice count> = the unit's tile, slice and count.
  Stmt bind(const FuncContents &consumer, Stmt body) const {
    const int slices = consumer.schedule.split_k.slices;
    Expr unit = var(units) - min, is_whole = unit >= tail_units;
    body = LetStmt::make(slice_count_name(consumer), select(is_whole, 1, slices), body);
    body = LetStmt::make(slice_loop_name(consumer), select(is_whole, 0, unit % slices), body);
    return LetStmt::make(loop, simplify(min + select(is_whole, unit - tail_units, whole + unit / slices)), body);
  }
};

// Rewrites the fuse site of the split producer: build_loop_nest left
// `for site: allocate producer { produce; consume }` there, each slice's
// produce already over its own range of the split variable.
class SplitAtSite : public IRMutator {
public:
  SplitAtSite(const Environment &env, const FuncContents &producer)
      : env_(env), producer_(producer), site_(stage_prefix(producer.schedule.at_func, 0) + producer.schedule.at_var) {
    const SplitReduction &split = env.output().schedule.split_k;
    if (split.splits_tail_only())
      tail_loop_ = stage_prefix(env.output().name, 0) + split.tail_loop;
  }
  bool rewritten = false;

private:
  using IRMutator::visit;
  Stmt visit(const For *op, const Stmt &self) override {
    if (op->name == tail_loop_) {
      tail_.emplace(op, env_.output());
      if (binds_or_reads(self, tail_->units))
        user_error("in schedule for '", env_.output().name, "': split_k_tail names its block loop '",
                   loop_short_name(tail_->units), "', which the schedule already uses; rename that loop");
    }
    Stmt result;
    if (op->name == site_) {
      result = rewrite_site(op);
    } else {
      bool block = op->for_kind == ForKind::GpuBlock;
      if (block)
        block_loops_.push_back(op->name);
      result = IRMutator::visit(op, self);
      if (block)
        block_loops_.pop_back();
    }
    if (op->name != tail_loop_)
      return result;
    const auto *loop = result.as<For>();
    COALESCE_INTERNAL_ASSERT(loop, "split_k_tail's loop '", op->name, "' was not rewritten as a loop");
    Stmt units = For::make(tail_->units, loop->min, tail_->extent(), loop->for_kind, loop->body, loop->gpu_dim,
                           loop->reduction_of, loop->role);
    tail_.reset();
    return units;
  }

  Stmt rewrite_site(const For *op) {
    const auto *allocate = op->body.as<Allocate>();
    COALESCE_INTERNAL_ASSERT(allocate && allocate->name == producer_.name, "the fuse site '", site_,
                             "' of the split '", producer_.name, "' does not allocate it first");
    // The produce is what comes before the first statement storing the
    // consumer (Block::make flattened the two into one list).
    const std::string &consumer = env_.output().name;
    std::vector<Stmt> stmts = {allocate->body};
    if (const auto *block = allocate->body.as<Block>())
      stmts = block->stmts;
    size_t first = 0;
    while (first < stmts.size() && !stored_buffers(stmts[first]).count(consumer))
      ++first;
    COALESCE_INTERNAL_ASSERT(first > 0 && first < stmts.size(), "the fuse site '", site_,
                             "' does not produce '", producer_.name, "' and then store '", consumer, "'");
    Stmt produce = Block::make(std::vector<Stmt>(stmts.begin(), stmts.begin() + static_cast<long>(first)));
    Stmt consume = Block::make(std::vector<Stmt>(stmts.begin() + static_cast<long>(first), stmts.end()));
    std::vector<std::string> blocks = block_loops_;
    blocks.push_back(op->name);
    rewritten = true;
    // The tile's place among the partial sums' tiles: under split_k_tail,
    // the tail loop's iteration counted from the first split one.
    std::vector<Expr> partial_tile;
    for (const std::string &loop : blocks)
      partial_tile.push_back(loop == tail_loop_ && tail_ ? simplify(var(loop) - tail_->min - tail_->whole) : var(loop));
    Stmt body = split_reduction_site(env_, producer_, allocate->memory, allocate->extents, produce, consume, blocks,
                                     partial_tile);
    if (env_.output().schedule.split_k.splits_tail_only()) {
      COALESCE_INTERNAL_ASSERT(tail_.has_value(), "split_k_tail's loop '", tail_loop_,
                               "' is not around the fuse site '", site_, "'");
      body = tail_->bind(env_.output(), body);
    }
    return For::make(op->name, op->min, op->extent, op->for_kind, body, op->gpu_dim, op->reduction_of, op->role);
  }

  const Environment &env_;
  const FuncContents &producer_;
  const std::string site_;
  std::string tail_loop_; // qualified; empty without split_k_tail
  std::optional<TailUnits> tail_;
  std::vector<std::string> block_loops_; // enclosing the visit, outermost first
};

} // namespace

Stmt split_reduction_across_blocks(const Stmt &s, const Environment &env) {
  const SplitReduction &split = env.output().schedule.split_k;
  if (!split.requested())
    return s;
  const FuncContents *producer = env.find(split.producer);
  COALESCE_INTERNAL_ASSERT(producer, "split_k of '", split.producer, "', not a Func of the pipeline");
  SplitAtSite rewrite(env, *producer);
  Stmt result = rewrite.mutate(s);
  COALESCE_INTERNAL_ASSERT(rewrite.rewritten, "the fuse site of the split '", split.producer, "' not found");
  return result;
}

} // namespace coalesce
