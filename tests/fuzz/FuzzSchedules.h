#pragma once
// The schedule a fuzz case draws over its algorithm (see FuzzCase.h): the
// structured GEMM and tensor-core templates most cases start from, then
// random primitives over every documented one, then the second sum's
// fusion. A UserError from a call leaves the schedule as it was.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "fuzz/FuzzAlgorithm.h"

#include <variant>

namespace coalesce::fuzz {

class ScheduleDraws : public AlgorithmDraws {
protected:
  using AlgorithmDraws::AlgorithmDraws;

  std::vector<std::string> loops(const Func &f, int stage) {
    std::vector<std::string> names;
    const auto &stages = f.contents()->schedule.stages;
    if (stage < static_cast<int>(stages.size()))
      for (const Dim &d : stages[stage].dims)
        names.push_back(d.var);
    return names;
  }
  VarOrRVar loop_of(const Func &f, int stage) {
    std::vector<std::string> names = loops(f, stage);
    std::string n = names.empty() || chance(5) ? name("q") : one_of(names);
    const auto &stages = f.contents()->schedule.stages;
    for (const Dim &d : stages[std::min<size_t>(stage, stages.size() - 1)].dims)
      if (d.var == n && d.is_rvar)
        return RVar(n);
    return Var(n);
  }
  int fresh_ = 0;
  std::string fresh() { return chance(97) ? "v" + std::to_string(fresh_++) : one_of(pool_); }
  VarOrRVar fresh_like(const VarOrRVar &v) { return v.is_rvar ? VarOrRVar(RVar(fresh())) : VarOrRVar(Var(fresh())); }
  int factor() {
    static const std::vector<int> factors = {1, 2, 3, 4, 8, 16, 32, 5, 64};
    return chance(2) ? (chance(50) ? 0 : 100000) : one_of(factors);
  }
  SharedLayout layout() {
    SharedLayout l;
    l.transposed = chance(30);
    l.padding = chance(5) ? -1 : pick(3) * 4;
    return l;
  }

  // A pipeline (TileCopies) from the choices the old flags made, with their
  // odds: two buffers 30% of the time, through asynchronous copies 70% of
  // those; a deeper pipeline, mostly with what it needs (asynchronous
  // copies), sometimes the TMA's (refused outside a warpgroup MMA's stage,
  // and at 2 stages), now and then a stage count out of range; TMA copies
  // outside a warpgroup MMA's pipeline (always refused) 3% of the time.
  TileCopies copies() {
    bool double_buffered = chance(30), async_copy = chance(70), zero_fill = chance(20), tma = chance(3);
    int stages = 2;
    if (chance(25)) {
      stages = 2 + pick(3);
      if (chance(85))
        double_buffered = async_copy = true;
      else
        tma = true;
    } else if (chance(2)) {
      double_buffered = async_copy = true;
      stages = one_of(std::vector<int>{0, 1, 9});
    }
    if (tma) {
      TmaCopies copies;
      copies.stages = stages;
      return copies;
    }
    if (!double_buffered)
      return OneBuffer{zero_fill};
    if (!async_copy)
      return RegisterDoubleBuffer{zero_fill};
    return AsyncCopies{stages, zero_fill};
  }

  // The pipeline of a second input staged at the same loop as one on
  // `first`: mostly the same one (its per-input zero_fill of its own),
  // sometimes another, which the same-pipeline rule refuses where it
  // differs.
  TileCopies second_copies(const TileCopies &first) {
    if (!chance(85))
      return copies();
    TileCopies second = first;
    bool zero_fill = chance(50) ? zero_fills(first) : chance(20);
    if (auto *one = std::get_if<OneBuffer>(&second))
      one->zero_fill = zero_fill;
    else if (auto *regs = std::get_if<RegisterDoubleBuffer>(&second))
      regs->zero_fill = zero_fill;
    else if (auto *async = std::get_if<AsyncCopies>(&second))
      async->zero_fill = zero_fill;
    return second;
  }

  static std::string copies_text(const TileCopies &c) {
    std::ostringstream text;
    text << describe(c) << ", zero_fill " << zero_fills(c);
    if (const TmaCopies *tma = tma_copies(c)) {
      if (tma->producer)
        text << ", producer warps " << tma->producer->warps << " registers " << tma->producer->registers;
      text << ", padded_copy " << padded_copy_name(tma->padded_copy) << ", multicast " << tma->multicast;
    }
    return text.str();
  }

  // The structured GEMM schedules most programs start from, so that deep
  // accepted schedules are common; random primitives follow.
  void template_schedule(std::ostream &log) {
    Func &out = *out_;
    Var bi(name("bi")), bj(name("bj")), ii(name("ii")), jj(name("jj")), ti(name("ti")), tj(name("tj")), ri(name("ri")),
        rj(name("rj"));
    int tile_m = one_of(std::vector<int>{8, 16, 32}), tile_n = one_of(std::vector<int>{8, 16, 32});
    int rb_m = one_of(std::vector<int>{1, 2, 4}), rb_n = one_of(std::vector<int>{1, 2, 4});
    log << "loops: " << bi.name() << " " << bj.name() << " " << ii.name() << " " << jj.name() << " " << ti.name() << " "
        << tj.name() << " " << ri.name() << " " << rj.name() << "\n";
    log << "template: tile " << tile_m << "x" << tile_n << " rb " << rb_m << "x" << rb_n << "\n";
    out.tile(*i_, *j_, bi, bj, ii, jj, tile_m, tile_n);
    if (chance(70))
      out.gpu_blocks({bi, bj});
    out.register_block(ii, jj, ti, tj, ri, rj, rb_m, rb_n);
    if (chance(80))
      out.gpu_threads({ti, tj});
    if (kind_ == 1 && chance(85)) {
      out.fuse_epilogue(*acc_, chance(80) ? bj : tj);
      RVar ko(name("ko")), ki(name("ki"));
      log << "k loops: " << ko.name() << " " << ki.name() << "\n";
      int step = one_of(std::vector<int>{1, 2, 4, 8});
      acc_->update().split(*k_, ko, ki, step);
      if (chance(80))
        acc_->update().reorder({ko, ti, tj, ki, ri, rj});
      if (chance(70))
        acc_->update().unroll(ki);
      TileCopies a_copies = copies(), b_copies = second_copies(a_copies);
      if (chance(60)) {
        log << "A copies: " << copies_text(a_copies) << "\n";
        acc_->update().stage_in_shared(*A_, ko, layout(), a_copies);
      }
      if (chance(60)) {
        log << "B copies: " << copies_text(b_copies) << "\n";
        acc_->update().stage_in_shared(*B_, ko, layout(), b_copies);
      }
      log << "fused at bj, k step " << step << "\n";
      maybe_split_k(log);
    }
  }

  // A reduction split across blocks (split_k), sometimes without the
  // reassociation it needs or with a slice count out of range. A UserError
  // from the call leaves the schedule as it was.
  void maybe_split_k(std::ostream &log) {
    if (!chance(25))
      return;
    int slices = chance(3) ? one_of(std::vector<int>{0, 1000}) : 1 + pick(6);
    SplitKMode mode = chance(30) ? SplitKMode::Atomic : SplitKMode::Deterministic;
    log << "split_k " << slices << " slices, " << split_k_mode_name(mode) << "\n";
    try {
      out_->split_k(*acc_, *k_, Var(name("kz")), slices, mode);
    } catch (const UserError &e) {
      log << "  refused: " << e.what() << "\n";
    }
    if (chance(90))
      acc_->update().allow_reassociation();
    maybe_split_k_tail(log);
  }

  // Only the last iterations of one of the output's loops split (any loop:
  // a block loop, or one the rules refuse), sometimes none.
  void maybe_split_k_tail(std::ostream &log) {
    if (!chance(40))
      return;
    VarOrRVar loop = loop_of(*out_, 0);
    int iterations = chance(10) ? 0 : 1 + pick(3);
    log << "split_k_tail " << loop.name << ", " << iterations << "\n";
    try {
      out_->split_k_tail(Var(loop.name), iterations);
    } catch (const UserError &e) {
      log << "  refused: " << e.what() << "\n";
    }
  }

  void mma_template(std::ostream &log) {
    MmaKind kind = in_type_ == BFloat(16)  ? MmaKind::BF16_m16n8k16
                   : in_type_ == Float(16) ? MmaKind::F16_m16n8k16
                                           : MmaKind::TF32_m16n8k8;
    if (chance(10))
      kind = one_of(std::vector<MmaKind>{MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16, MmaKind::TF32_m16n8k8});
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), warp("warp"), lane("lane"), mi("mi"), nj("nj"), fi("fi"), fj("fj");
    // The knobs of MmaTiling (dsl/recipes/GemmMmaSchedule.h): block and warp
    // tiles (some that do not divide, or that are not whole instructions),
    // k step, pipeline depth, padding, blocks per SM.
    int block_m = one_of(std::vector<int>{16, 32, 64, 128}), block_n = one_of(std::vector<int>{16, 32, 64, 128});
    int warp_m = one_of(std::vector<int>{16, 32, 64}), warp_n = one_of(std::vector<int>{8, 16, 32, 64});
    if (chance(5))
      warp_n = one_of(std::vector<int>{0, 12, 24});
    int k_step = one_of(std::vector<int>{8, 16, 32, 64});
    if (chance(5))
      k_step = one_of(std::vector<int>{0, 12, 24});
    if (in_type_ != Float(32) && chance(60)) {
      // Hopper's warpgroup MMA: 64 x N per warpgroup, k steps of 64, with
      // some tiles it refuses (32 rows, 32 columns, k step 32).
      kind = in_type_ == BFloat(16)  ? MmaKind::BF16_wgmma_m64k16
             : in_type_ == Float(16) ? MmaKind::F16_wgmma_m64k16
                                     : MmaKind::E4M3_wgmma_m64k32; // refused: B is read B(k, j)
      block_m = one_of(std::vector<int>{64, 128, 128, 32});
      block_n = one_of(std::vector<int>{64, 128, 128});
      warp_m = chance(90) ? 64 : 32;
      warp_n = chance(85) ? std::min(block_n, one_of(std::vector<int>{64, 128})) : 32;
      k_step = one_of(std::vector<int>{64, 64, 128, 32});
    } else if (in_type_ == Float(32) && chance(40)) {
      // The tf32 warpgroup MMA (B stored transposed): k steps of 32, with
      // some it refuses (16).
      kind = MmaKind::TF32_wgmma_m64k8;
      block_m = one_of(std::vector<int>{64, 128, 128, 32});
      block_n = one_of(std::vector<int>{64, 128, 128});
      warp_m = chance(90) ? 64 : 32;
      warp_n = chance(85) ? std::min(block_n, one_of(std::vector<int>{64, 128})) : 32;
      k_step = one_of(std::vector<int>{32, 32, 64, 16});
    }
    // The f32 kinds either way: rounded to tf32, or truncated by the
    // instruction (the TMA then reads A and an N x K B as they lie).
    if (mma_reads_f32(kind) && chance(30))
      kind = is_warpgroup_mma(kind) ? MmaKind::TF32Truncated_wgmma_m64k8 : MmaKind::TF32Truncated_m16n8k8;
    log << "mma template " << mma_kind_name(kind) << " block " << block_m << "x" << block_n << " warp " << warp_m << "x"
        << warp_n << " k step " << k_step << "\n";
    out_->tile(*i_, *j_, bi, bj, ii, jj, block_m, block_n).gpu_blocks({bi, bj});
    out_->mma_tile(ii, jj, kind, warp_m, warp_n, warp, lane, mi, nj, fi, fj);
    out_->fuse_epilogue(*acc_, bj);
    if (chance(35)) {
      TileStores stores = one_of(std::vector<TileStores>(std::begin(kTileStores), std::end(kTileStores)));
      log << "gpu_tile_stores " << tile_stores_name(stores) << "\n";
      out_->gpu_tile_stores(stores);
    }
    if (chance(30)) {
      int blocks = pick(3);
      log << "gpu_min_blocks_per_sm " << blocks << "\n";
      out_->gpu_min_blocks_per_sm(blocks);
    }
    RVar ko("ko"), kk("kk");
    SharedLayout l = layout();
    TileCopies base = copies();
    bool one_buffer = std::holds_alternative<OneBuffer>(base);
    bool through_registers = std::holds_alternative<RegisterDoubleBuffer>(base);
    bool double_buffered = !one_buffer, zero_fill = chance(85);
    int stages = one_buffer || through_registers ? 2 : tile_buffers(base);
    l.transposed = chance(10);
    if (chance(70)) {
      double_buffered = chance(80);
      through_registers = false;
      stages = double_buffered ? 2 + pick(3) : 2;
      l.padding = one_of(std::vector<int>{0, 4, 8});
    }
    if (is_warpgroup_mma(kind) && chance(85)) {
      // Mostly the layout the warpgroup MMA takes (the compiler's swizzle).
      l.padding = 0;
      l.transposed = false;
    }
    TileCopies c;
    // TMA copies: mostly where a warpgroup MMA's pipeline can take them
    // (one buffer or 2 stages: refused, a TMA pipeline has 3 to 8).
    if (is_warpgroup_mma(kind) ? chance(50) : chance(5)) {
      TmaCopies tma;
      tma.stages = double_buffered ? stages : 2;
      // Producer warps (warp specialization), now and then out of range,
      // sometimes reallocating registers (some counts refused).
      if (chance(40)) {
        ProducerWarps p;
        p.warps = chance(95) ? 1 + pick(4) : one_of(std::vector<int>{-1, 0, 5});
        if (chance(10))
          p.registers = one_of(std::vector<int>{40, 232, 44, 300});
        tma.producer = p;
      }
      // tf32 takes the TMA only through the padded copy made always; a
      // multicast without gpu_cluster is refused.
      tma.padded_copy = chance(20)   ? PaddedCopy::Always
                        : chance(20) ? PaddedCopy::WhereRowsAreRagged
                                     : PaddedCopy::Never;
      tma.multicast = chance(3);
      c = tma;
    } else if (!double_buffered) {
      c = OneBuffer{zero_fill};
    } else if (through_registers) {
      c = RegisterDoubleBuffer{zero_fill};
    } else {
      c = AsyncCopies{stages, zero_fill};
    }
    TileCopies b_copies = chance(95) ? c : copies();
    log << "staging: padding " << l.padding << " transposed " << l.transposed << "; A copies: " << copies_text(c)
        << "; B copies: " << copies_text(b_copies) << "\n";
    acc_->update().mma(*k_, ko, kk, k_step);
    if (chance(90))
      acc_->update().allow_reassociation();
    acc_->update().stage_in_shared(*A_, ko, l, c).stage_in_shared(*B_, ko, l, b_copies);
    maybe_split_k(log);
    has_mma_ = true;
  }

  // One random primitive on a random Func and stage. A UserError from the
  // call itself is fine: the primitive is all or nothing, and the case
  // goes on with the schedule as it was.
  void random_primitive(std::ostream &log) {
    std::vector<Func *> funcs = {out_.get()};
    if (acc_)
      funcs.push_back(acc_.get());
    if (mid_f_)
      funcs.push_back(mid_f_.get());
    Func &f = *one_of(funcs);
    int stages = static_cast<int>(f.contents()->schedule.stages.size());
    int s = pick(stages);
    Stage st = s == 0 ? f.pure() : f.update(s - 1);
    int op = pick(27);
    log << "  op " << op << " on " << st.describe() << ": ";
    try {
      switch (op) {
      case 0:
      case 1: {
        VarOrRVar v = loop_of(f, s);
        int fac = factor();
        log << "split " << v.name << " by " << fac;
        st.split(v, fresh_like(v), fresh_like(v), fac);
        break;
      }
      case 2: {
        VarOrRVar a = loop_of(f, s), b = loop_of(f, s);
        log << "tile " << a.name << " " << b.name;
        st.tile(a, b, fresh_like(a), fresh_like(b), fresh_like(a), fresh_like(b), factor(), factor());
        break;
      }
      case 3:
      case 4: {
        std::vector<VarOrRVar> order;
        int n = 1 + pick(4);
        for (int m = 0; m < n; ++m)
          order.push_back(loop_of(f, s));
        log << "reorder";
        for (auto &v : order)
          log << " " << v.name;
        st.reorder(order);
        break;
      }
      case 5: {
        VarOrRVar v = loop_of(f, s);
        log << "unroll " << v.name;
        st.unroll(v);
        break;
      }
      case 6: {
        VarOrRVar v = loop_of(f, s);
        log << "vectorize " << v.name;
        st.vectorize(v);
        break;
      }
      case 7:
      case 8: {
        std::vector<VarOrRVar> vs;
        int n = 1 + pick(chance(5) ? 4 : 2);
        for (int m = 0; m < n; ++m)
          vs.push_back(loop_of(f, s));
        log << (op == 7 ? "gpu_blocks" : "gpu_threads");
        for (auto &v : vs)
          log << " " << v.name;
        op == 7 ? st.gpu_blocks(vs) : st.gpu_threads(vs);
        break;
      }
      case 9: {
        VarOrRVar a = loop_of(f, s), b = loop_of(f, s);
        log << "register_block " << a.name << " " << b.name;
        st.register_block(a, b, fresh_like(a), fresh_like(b), fresh_like(a), fresh_like(b), 1 + pick(4), 1 + pick(4));
        break;
      }
      case 10: {
        VarOrRVar a = loop_of(f, s), b = loop_of(f, s);
        log << "fuse " << a.name << " " << b.name;
        st.fuse(a, b, Var(fresh()));
        break;
      }
      case 11: {
        Func &c = *one_of(funcs);
        VarOrRVar v = loop_of(c, 0);
        log << f.name() << ".compute_at(" << c.name() << ", " << v.name << ")";
        f.compute_at(c, v);
        break;
      }
      case 12:
        log << "compute_root";
        f.compute_root();
        break;
      case 13:
        log << "compute_inline";
        f.compute_inline();
        break;
      case 14: {
        MemoryType m = one_of(
            std::vector<MemoryType>{MemoryType::Register, MemoryType::Shared, MemoryType::Heap, MemoryType::Auto});
        log << "store_in " << static_cast<int>(m);
        f.store_in(m);
        break;
      }
      case 15: {
        Func &p = *one_of(funcs);
        VarOrRVar v = loop_of(f, 0);
        log << f.name() << ".fuse_epilogue(" << p.name() << ", " << v.name << ")";
        f.fuse_epilogue(p, v);
        break;
      }
      case 16:
        log << "fold_bias_into_init";
        f.fold_bias_into_init();
        break;
      case 17: {
        Input &in = chance(50) || !B_ ? *A_ : chance(80) ? *B_ : *bias_;
        VarOrRVar v = loop_of(f, s);
        TileCopies c = copies();
        log << "stage_in_shared " << in.name() << " at " << v.name << " (" << copies_text(c) << ")";
        st.stage_in_shared(in, v, layout(), c);
        break;
      }
      case 18:
        log << "allow_reassociation";
        st.allow_reassociation();
        break;
      case 19: {
        log << "bound";
        // The draws in the order the compiler evaluated them when they were
        // one call's arguments (the value's first), so seeds name the same cases.
        bool extent = chance(90), m = extent && chance(50);
        int number = !extent ? pick(50) : m ? M_ : N_;
        bool on_i = chance(50);
        Expr value = !extent ? Expr(number) : m ? extent_m() : extent_n();
        f.bound(on_i ? *i_ : *j_, value);
        sizes_may_differ_ = true;
        if (&f == out_.get())
          (on_i ? out_rows_bound_ : out_columns_bound_) = number;
        break;
      }
      case 20: {
        int b = pick(34);
        log << "gpu_min_blocks_per_sm " << b;
        f.gpu_min_blocks_per_sm(b);
        break;
      }
      case 21: {
        log << "allow_reduction_invariant_terms";
        st.allow_reduction_invariant_terms();
        break;
      }
      case 22: {
        VarOrRVar a = loop_of(f, s), b = loop_of(f, s);
        MmaKind kind = one_of(std::vector<MmaKind>{
            MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16, MmaKind::TF32_m16n8k8, MmaKind::BF16_wgmma_m64k16,
            MmaKind::F16_wgmma_m64k16, MmaKind::TF32_wgmma_m64k8, MmaKind::E4M3_wgmma_m64k32, MmaKind::None});
        int wm = one_of(std::vector<int>{16, 32, 8, 64}), wn = one_of(std::vector<int>{8, 16, 32, 12, 64});
        log << "mma_tile " << a.name << " " << b.name << " " << mma_kind_name(kind) << " " << wm << "x" << wn;
        st.mma_tile(Var(a.name), Var(b.name), kind, wm, wn, Var(fresh()), Var(fresh()), Var(fresh()), Var(fresh()),
                    Var(fresh()), Var(fresh()));
        if (kind != MmaKind::None)
          has_mma_ = true; // tf32 tolerance if it is accepted
        break;
      }
      case 24: {
        int rows = pick(10);
        log << "gpu_block_groups " << rows;
        f.gpu_block_groups(rows);
        break;
      }
      case 26: {
        int blocks = 1 + pick(6);
        log << "gpu_persistent_blocks " << blocks;
        f.gpu_persistent_blocks(blocks);
        break;
      }
      case 25: {
        TileStores stores = one_of(std::vector<TileStores>(std::begin(kTileStores), std::end(kTileStores)));
        log << "gpu_tile_stores " << tile_stores_name(stores);
        f.gpu_tile_stores(stores);
        break;
      }
      case 23: {
        VarOrRVar k = loop_of(f, s);
        int step = one_of(std::vector<int>{8, 16, 32, 12, 64});
        log << "mma " << k.name << " step " << step;
        st.mma(RVar(k.name), RVar(fresh()), RVar(fresh()), step);
        has_mma_ = true;
        break;
      }
      }
      log << "\n";
    } catch (const UserError &e) {
      log << " -> rejected: " << e.what() << "\n";
    }
  }

  // The tensor-core recipe (schedule_gemm_mma) with its knobs drawn: every
  // pipeline variant, tile stores, persistent grids, clusters and split-K,
  // which the template above reaches only rarely together, over this
  // case's algorithm (its epilogue, intermediate Funcs, second sum, views
  // and fixed extents), checked on the CPU and by ptxas like any schedule.
  void recipe_schedule(std::ostream &log) {
    const bool wide16 = in_type_ == BFloat(16) || in_type_ == Float(16);
    MmaKind kind = in_type_ == BFloat(16)  ? MmaKind::BF16_wgmma_m64k16
                   : in_type_ == Float(16) ? MmaKind::F16_wgmma_m64k16
                   : in_type_.is_fp8()     ? MmaKind::E4M3_wgmma_m64k32
                                           : MmaKind::TF32_wgmma_m64k8;
    if (recipe_chance(25))
      kind = in_type_ == Float(32) ? MmaKind::TF32_m16n8k8 : wide16 ? MmaKind::BF16_m16n8k16 : kind;
    if (mma_reads_f32(kind) && recipe_chance(30))
      kind = is_warpgroup_mma(kind) ? MmaKind::TF32Truncated_wgmma_m64k8 : MmaKind::TF32Truncated_m16n8k8;
    MmaTiling t = default_mma_tiling(kind, std::max(M_, 1), std::max(N_, 1), 132);
    t.block_m = recipe_chance(50) ? 64 : 128;
    t.block_n = std::vector<int>{64, 128, 256}[recipe_pick(3)];
    if (is_warpgroup_mma(kind)) {
      t.warp_m = 64;
      t.warp_n = std::min(t.block_n, recipe_chance(50) ? 64 : 256);
      t.tma = recipe_chance(60);
      if (t.tma && recipe_chance(50)) {
        t.producer_warps = recipe_chance(30) ? 1 : 4;
        t.producer_registers = recipe_chance(40) ? 40 : 0;
      }
      // Copies of both, or of one input alone (what the default makes where
      // one input's rows split the L2's sectors); tf32's copies round both.
      const bool padded = t.tma && (kind == MmaKind::TF32_wgmma_m64k8 || recipe_chance(15));
      constexpr PaddedCopies kCopies[] = {PaddedCopies::Both, PaddedCopies::A, PaddedCopies::B};
      t.tma_padded_copies = !padded                             ? PaddedCopies::None
                            : kind == MmaKind::TF32_wgmma_m64k8 ? PaddedCopies::Both
                                                                : kCopies[recipe_pick(3)];
      t.cluster_blocks = recipe_chance(15) ? 2 : 0;
    }
    t.stages = 2 + recipe_pick(3);
    t.min_blocks_per_sm = recipe_pick(3);
    t.tile_stores = kTileStores[recipe_pick(3)];
    t.persistent_blocks = recipe_chance(20) ? 1 + recipe_pick(4) : 0;
    t.split_k = recipe_chance(20) ? 2 + recipe_pick(2) : 1;
    t.split_k_tail_rows = t.split_k > 1 && recipe_chance(40) ? 1 + recipe_pick(2) : 0;
    log << "recipe " << t.str() << "\n";
    schedule_gemm_mma(*out_, *acc_, *A_, *B_, *i_, *j_, *k_, t);
    has_mma_ = true;
  }

  void schedule(std::ostream &log) {
    try {
      int style = pick(10);
      // A case in eight from the recipe, its draws from their own generator
      // (so that the other cases' draws stay as they were).
      if (kind_ == 1 && !must_reject_ && recipe_chance(12))
        recipe_schedule(log);
      else if (kind_ == 1 && style == 0)
        mma_template(log);
      else if (style < 6)
        template_schedule(log);
    } catch (const UserError &e) {
      log << "template rejected: " << e.what() << "\n";
    }
    int n = pick(5);
    for (int m = 0; m < n; ++m)
      random_primitive(log);
    maybe_fuse_second_sum(log);
  }

  // u scheduled as acc is (its schedule copied, B2 staged where B is),
  // mostly; then fused with acc, mostly. Whatever the rules refuse ends in
  // a UserError.
  void maybe_fuse_second_sum(std::ostream &log) {
    if (!u_)
      return;
    if (chance(75)) {
      FuncSchedule mirrored = acc_->contents()->schedule;
      mirrored.fused_reduction_with.clear();
      // u has one update: acc's second (post_stage_) has no stage in u.
      mirrored.stages.resize(u_->contents()->schedule.stages.size());
      for (StageSchedule &stage : mirrored.stages)
        for (SharedStaging &staged : stage.staged_inputs)
          if (staged.input == B_->name())
            staged.input = B2_->name();
      u_->contents()->schedule = mirrored;
      log << "u scheduled as acc\n";
    }
    if (chance(85)) {
      bool first = chance(50);
      log << (first ? "u.fuse_reduction_with(acc)\n" : "acc.fuse_reduction_with(u)\n");
      if (first)
        u_->fuse_reduction_with(*acc_);
      else
        acc_->fuse_reduction_with(*u_);
    }
  }
};

} // namespace coalesce::fuzz
