#pragma once
// A seeded generator of (algorithm, schedule, shape) cases over every
// documented primitive, and the oracle each case must satisfy: it ends in a
// UserError, or its CPU result matches a float64 reference (tolerance by
// element type), and a GPU-mapped schedule's PTX assembles with ptxas. An
// InternalError, another exception, a crash, a hang, a slow compile or a
// wrong result is a failure. Each case runs in a child process, so that a
// crash or a hang is reported as such instead of ending the run.

#include "dsl/FuncContents.h"
#include "codegen/PtxAssembler.h"
#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "dsl/IROperator.h"
#include "runtime/Pipeline.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace coalesce::fuzz {

enum class Outcome { UserError, Matched, MatchedPtx, GpuRejected, Internal, Wrong, Crash, Hang, Slow, Ptxas, Other };

inline const char *outcome_name(Outcome o) {
  switch (o) {
  case Outcome::UserError: return "user_error";
  case Outcome::Matched: return "matched_cpu";
  case Outcome::MatchedPtx: return "matched_cpu+ptxas";
  case Outcome::GpuRejected: return "matched_cpu+gpu_user_error";
  case Outcome::Internal: return "FAIL_internal_error";
  case Outcome::Wrong: return "FAIL_wrong_result";
  case Outcome::Crash: return "FAIL_crash";
  case Outcome::Hang: return "FAIL_hang";
  case Outcome::Slow: return "FAIL_slow_compile";
  case Outcome::Ptxas: return "FAIL_ptxas";
  case Outcome::Other: return "FAIL_other_exception";
  }
  return "?";
}
inline bool is_failure(Outcome o) { return o >= Outcome::Internal; }

/// Seconds one case may take to compile and run before it counts as slow.
constexpr double kCaseSeconds = 20;

class Case {
public:
  explicit Case(uint64_t seed) : rng_(seed) {}

  /// Builds and checks the case; `log` receives the program as it is built.
  Outcome run(std::ostream &log) {
    auto start = std::chrono::steady_clock::now();
    try {
      build(log);
      Outcome o = check(log);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (seconds > kCaseSeconds && !is_failure(o)) {
        log << "took " << seconds << " s\n";
        return Outcome::Slow;
      }
      return o;
    } catch (const InternalError &e) {
      log << "internal error: " << e.what() << "\n";
      return Outcome::Internal;
    } catch (const UserError &e) {
      log << "user error: " << e.what() << "\n";
      return Outcome::UserError;
    } catch (const std::exception &e) {
      log << "exception: " << e.what() << "\n";
      return Outcome::Other;
    }
  }

private:
  std::mt19937_64 rng_;
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  template <typename T> const T &one_of(const std::vector<T> &v) { return v[pick(static_cast<int>(v.size()))]; }

  // Names: mostly the usual, sometimes one that collides with another name,
  // a Param, an Input or an internal-looking one.
  std::vector<std::string> pool_ = {"i", "j", "k", "x", "y", "A", "B", "M", "N", "K", "bias", "acc", "out", "t",
                                    "ti", "A_shared", "B_fetch", "coalesce_out", "s0", "tanhf", "ko", "ki", "bi"};
  std::string name(const std::string &usual) {
    if (chance(96))
      return usual;
    return one_of(pool_) + (chance(50) ? "" : std::to_string(pick(3)));
  }

  // The algorithm: kind 0 elementwise, 1 GEMM + epilogue.
  int kind_ = 1;
  Type in_type_ = Float(32), out_type_ = Float(32);
  int epilogue_ = 0;        // 0 relu, 1 gelu, 2 none, 3 gelu_tanh
  bool mid_ = false;        // epilogue through an intermediate Func
  bool post_stage_ = false; // acc(i, j) = acc(i, j) * 0.5f + 1.0f after the sum
  bool must_reject_ = false;
  int M_ = 0, N_ = 0, K_ = 0;
  std::unique_ptr<Param> pM_, pN_, pK_;
  std::unique_ptr<Input> A_, B_, bias_, B2_;
  std::unique_ptr<Var> i_, j_;
  std::unique_ptr<RDom> k_;
  std::unique_ptr<Func> acc_, mid_f_, out_;
  // A second sum over the same A, u = A B2, multiplying the epilogue (a
  // SwiGLU's shape); sometimes scheduled as acc is and fused with it
  // (fuse_reduction_with).
  std::unique_ptr<Func> u_;
  std::vector<Func> funcs_;
  bool has_mma_ = false;

  Expr widen(Expr e) { return e.type() == Float(32) ? e : cast(Float(32), e); }

  // Inputs are sometimes views into wider buffers (rows `lead` elements
  // apart, more than a row holds: half the time the next multiple of 8 or
  // 16 elements, whole 16-byte vectors for 16-bit inputs, so that the
  // vector copies and the TMA read rows that may end ragged), the elements
  // between NaN.
  int a_lead_ = 0, b_lead_ = 0; // 0: dense
  // A is sometimes stored K x M (read A(k, i)), and the output sometimes a
  // view with rows out_lead_ apart (Func::output_strides), or stored
  // column-major with columns out_lead_ apart, the elements between them a
  // value the kernels must leave alone.
  bool a_km_ = false;
  bool b_nk_ = false; // B stored N x K (nn.Linear's weight), read B(j, k)
  int out_lead_ = 0; // 0: dense
  bool out_column_major_ = false; // out(i, j) at i + j * out_lead_
  bool out_overlaps_ = false;     // rows (columns) closer than N (M) elements: refused when bound
  // The output view's runs along its contiguous dimension: their length,
  // and how many.
  int out_run_length() const { return out_column_major_ ? M_ : N_; }
  int out_runs() const { return out_column_major_ ? N_ : M_; }
  // A bound() may fix an extent the buffers, sized M x N, do not have, and
  // Params that share a name are one size: the run may then refuse the
  // buffers, rightly.
  bool sizes_may_differ_ = false;
  static constexpr float kBetweenRows = 7.0f; // exact in every output type
  Expr a_at(const Expr &i, const Expr &k) const { return a_km_ ? (*A_)(k, i) : (*A_)(i, k); }
  Expr b_at(const Expr &k, const Expr &j) const { return b_nk_ ? (*B_)(j, k) : (*B_)(k, j); }
  std::unique_ptr<Input> input(const std::string &input_name, std::vector<Expr> extents, int columns, int &lead) {
    lead = !chance(12) ? 0 : chance(50) ? columns + 1 + pick(8) : (columns / 8 + 1 + pick(2)) * 8;
    if (!lead)
      return std::make_unique<Input>(input_name, in_type_, extents);
    log_ << "input " << input_name << " is a view, rows " << lead << " apart\n";
    return std::make_unique<Input>(input_name, in_type_, extents, std::vector<Expr>{lead, 1});
  }
  std::ostringstream log_;
  /// `dense` laid into rows `lead` apart (0: `dense` itself), NaN between.
  static Buffer laid_out(const Buffer &dense, int lead) {
    if (!lead)
      return dense;
    int rows = dense.shape()[0], columns = dense.shape()[1];
    Buffer parent({rows, lead}, dense.type());
    for (size_t e = 0; e < parent.size(); ++e)
      parent.set(e, std::numeric_limits<float>::quiet_NaN());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c)
        parent.set(size_t(r) * lead + c, dense.get(size_t(r) * columns + c));
    return parent;
  }

  void build(std::ostream &log) {
    kind_ = chance(25) ? 0 : 1;
    int t = pick(10);
    in_type_ = t < 6 ? Float(32) : t < 8 ? BFloat(16) : t < 9 ? Float(16) : Float8E4M3();
    out_type_ = chance(80) ? Float(32) : in_type_;
    epilogue_ = pick(4);
    mid_ = kind_ == 1 && chance(20);
    post_stage_ = kind_ == 1 && chance(10);
    M_ = 1 + pick(40), N_ = 1 + pick(40), K_ = 1 + pick(24);
    if (chance(3))
      (chance(50) ? M_ : N_) = 0;
    // K = 0: the sum adds nothing, out = epilogue(initial value).
    if (chance(4))
      K_ = 0;
    pM_ = std::make_unique<Param>(name("M"));
    pN_ = std::make_unique<Param>(name("N"));
    pK_ = std::make_unique<Param>(name("K"));
    sizes_may_differ_ = pM_->name() == pN_->name() || pM_->name() == pK_->name() || pN_->name() == pK_->name();
    i_ = std::make_unique<Var>(name("i"));
    j_ = std::make_unique<Var>(name("j"));
    Var &i = *i_, &j = *j_;
    out_ = std::make_unique<Func>(name("out"));
    bias_ = std::make_unique<Input>(name("bias"), Float(32), std::vector<Expr>{*pN_});
    log << "names: M " << pM_->name() << ", N " << pN_->name() << ", K " << pK_->name() << ", i " << i_->name()
        << ", j " << j_->name() << ", out " << out_->name() << ", bias " << bias_->name() << "\n";
    log << "types in " << in_type_ << " out " << out_type_ << ", M N K " << M_ << " " << N_ << " " << K_ << "\n";
    if (kind_ == 0) {
      A_ = input(name("A"), {*pM_, *pN_}, N_, a_lead_);
      Expr v = widen((*A_)(i, j)) * 2.0f + (*bias_)(j);
      (*out_)(i, j) = out_type_ == Float(32) ? v : cast(out_type_, v);
      log << "out(i, j) = A(i, j) * 2 + bias(j)\n";
    } else {
      a_km_ = chance(12);
      if (a_km_)
        log << "A stored K x M, read A(k, i)\n";
      A_ = a_km_ ? input(name("A"), {*pK_, *pM_}, M_, a_lead_) : input(name("A"), {*pM_, *pK_}, K_, a_lead_);
      b_nk_ = chance(15);
      if (b_nk_)
        log << "B stored N x K, read B(j, k)\n";
      B_ = b_nk_ ? input(name("B"), {*pN_, *pK_}, K_, b_lead_) : input(name("B"), {*pK_, *pN_}, N_, b_lead_);
      k_ = std::make_unique<RDom>(0, *pK_, name("k"));
      log << "names: A " << A_->name() << ", B " << B_->name() << ", k " << k_->var().name() << "\n";
      acc_ = std::make_unique<Func>(name("acc"));
      Func &acc = *acc_;
      acc(i, j) = 0.0f;
      bool cycle = chance(3);
      if (cycle) {
        Func gate(name("gate"));
        gate(i, j) = select(acc(i, j) > 0.0f, 1.0f, 0.5f);
        acc(i, j) += a_at(i, *k_) * b_at(*k_, j) * gate(i, j);
        if (chance(50))
          gate.compute_root();
        funcs_.push_back(gate);
        must_reject_ = true;
        log << "acc += A*B*gate(acc): must be rejected\n";
      } else {
        acc(i, j) += a_at(i, *k_) * b_at(*k_, j);
      }
      if (post_stage_)
        acc(i, j) = acc(i, j) * 0.5f + 1.0f;
      Expr biased = acc(i, j) + (*bias_)(j);
      if (mid_) {
        mid_f_ = std::make_unique<Func>(name("mid"));
        (*mid_f_)(i, j) = biased;
        biased = (*mid_f_)(i, j);
      }
      Expr v = epilogue_ == 0 ? relu(biased) : epilogue_ == 1 ? gelu(biased) : epilogue_ == 2 ? biased : gelu_tanh(biased);
      if (!cycle && chance(20)) {
        B2_ = std::make_unique<Input>(name("B2"), in_type_, std::vector<Expr>{*pK_, *pN_});
        u_ = std::make_unique<Func>(name("u"));
        (*u_)(i, j) = 0.0f;
        (*u_)(i, j) += a_at(i, *k_) * (*B2_)(*k_, j);
        v = v * (*u_)(i, j);
        log << "u += A*B2 (" << B2_->name() << ", " << u_->name() << "); out = epilogue * u\n";
      }
      (*out_)(i, j) = out_type_ == Float(32) ? v : cast(out_type_, v);
      log << "acc += A*B" << (post_stage_ ? "; acc = acc*0.5 + 1" : "") << (mid_ ? "; mid = acc + bias" : "")
          << "; out = epilogue " << epilogue_ << "\n";
    }
    if (chance(10)) {
      out_column_major_ = chance(30);
      const int length = out_run_length();
      out_lead_ = chance(50) ? length + 1 + pick(8) : (length / 8 + 1 + pick(2)) * 8;
      if (out_column_major_ && chance(30))
        out_lead_ = std::max(1, length); // dense column-major
      // Runs closer than their length overlap: binding must refuse them,
      // writing nothing.
      out_overlaps_ = M_ > 1 && N_ > 1 && chance(20);
      if (out_overlaps_)
        out_lead_ = 1 + pick(length - 1);
      if (out_column_major_)
        out_->output_strides({1, out_lead_});
      else
        out_->output_strides({out_lead_, 1});
      log << "out is a view, " << (out_column_major_ ? "column-major, columns " : "rows ") << out_lead_ << " apart"
          << (out_overlaps_ ? " (overlapping)" : "") << "\n";
    }
    schedule(log);
  }

  // ------------------------------------------------------------ schedules

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
      text << ", padded_copy " << tma->padded_copy << ", multicast " << tma->multicast;
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
    log << "loops: " << bi.name() << " " << bj.name() << " " << ii.name() << " " << jj.name() << " " << ti.name()
        << " " << tj.name() << " " << ri.name() << " " << rj.name() << "\n";
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
  }

  void mma_template(std::ostream &log) {
    MmaKind kind = in_type_ == BFloat(16) ? MmaKind::BF16_m16n8k16
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
    log << "mma template " << mma_kind_name(kind) << " block " << block_m << "x" << block_n << " warp " << warp_m
        << "x" << warp_n << " k step " << k_step << "\n";
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
      // tf32 takes the TMA only through the padded copy; a multicast
      // without gpu_cluster is refused.
      tma.padded_copy = chance(20);
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
      case 0: case 1: {
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
      case 3: case 4: {
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
      case 5: { VarOrRVar v = loop_of(f, s); log << "unroll " << v.name; st.unroll(v); break; }
      case 6: { VarOrRVar v = loop_of(f, s); log << "vectorize " << v.name; st.vectorize(v); break; }
      case 7: case 8: {
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
      case 12: log << "compute_root"; f.compute_root(); break;
      case 13: log << "compute_inline"; f.compute_inline(); break;
      case 14: {
        MemoryType m = one_of(std::vector<MemoryType>{MemoryType::Register, MemoryType::Shared, MemoryType::Heap,
                                                      MemoryType::Auto});
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
      case 16: log << "fold_bias_into_init"; f.fold_bias_into_init(); break;
      case 17: {
        Input &in = chance(50) || !B_ ? *A_ : chance(80) ? *B_ : *bias_;
        VarOrRVar v = loop_of(f, s);
        TileCopies c = copies();
        log << "stage_in_shared " << in.name() << " at " << v.name << " (" << copies_text(c) << ")";
        st.stage_in_shared(in, v, layout(), c);
        break;
      }
      case 18: log << "allow_reassociation"; st.allow_reassociation(); break;
      case 19: {
        log << "bound";
        f.bound(chance(50) ? *i_ : *j_, chance(90) ? Expr(chance(50) ? *pM_ : *pN_) : Expr(pick(50)));
        sizes_may_differ_ = true;
        break;
      }
      case 20: { int b = pick(34); log << "gpu_min_blocks_per_sm " << b; f.gpu_min_blocks_per_sm(b); break; }
      case 21: {
        log << "allow_reduction_invariant_terms";
        st.allow_reduction_invariant_terms();
        break;
      }
      case 22: {
        VarOrRVar a = loop_of(f, s), b = loop_of(f, s);
        MmaKind kind = one_of(std::vector<MmaKind>{MmaKind::BF16_m16n8k16, MmaKind::F16_m16n8k16,
                                                   MmaKind::TF32_m16n8k8, MmaKind::BF16_wgmma_m64k16,
                                                   MmaKind::F16_wgmma_m64k16, MmaKind::TF32_wgmma_m64k8,
                                                   MmaKind::E4M3_wgmma_m64k32, MmaKind::None});
        int wm = one_of(std::vector<int>{16, 32, 8, 64}), wn = one_of(std::vector<int>{8, 16, 32, 12, 64});
        log << "mma_tile " << a.name << " " << b.name << " " << mma_kind_name(kind) << " " << wm << "x" << wn;
        st.mma_tile(Var(a.name), Var(b.name), kind, wm, wn, Var(fresh()), Var(fresh()), Var(fresh()), Var(fresh()),
                    Var(fresh()), Var(fresh()));
        if (kind != MmaKind::None)
          has_mma_ = true; // tf32 tolerance if it is accepted
        break;
      }
      case 24: { int rows = pick(10); log << "gpu_block_groups " << rows; f.gpu_block_groups(rows); break; }
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

  void schedule(std::ostream &log) {
    try {
      int style = pick(10);
      if (kind_ == 1 && style == 0)
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

  // -------------------------------------------------------------- oracle

  float input_value(int seed, size_t e) {
    return static_cast<float>(static_cast<int>((e * 2654435761u + seed * 97) % 17) - 8) / 8.0f;
  }
  void fill(Buffer &b, int seed) {
    for (size_t e = 0; e < b.size(); ++e)
      b.set(e, input_value(seed, e));
  }
  static double act(int epilogue, double x) {
    switch (epilogue) {
    case 0: return std::isnan(x) ? x : std::max(x, 0.0);
    case 1: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case 2: return x;
    default: return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    }
  }

  Outcome check(std::ostream &log) {
    Pipeline p(*out_);
    std::string nest = p.loop_nest();
    if (must_reject_) {
      log << "accepted a reduction that reads its own value:\n" << nest;
      return Outcome::Wrong;
    }
    Buffer A(kind_ == 0 ? std::vector<int>{M_, N_} : std::vector<int>{M_, K_}, in_type_), bias({N_}),
        out({M_, N_}, out_type_);
    Buffer B(kind_ == 0 ? std::vector<int>{1, 1} : std::vector<int>{K_, N_}, in_type_);
    Buffer B2(u_ ? std::vector<int>{K_, N_} : std::vector<int>{1, 1}, in_type_);
    fill(A, 1), fill(B, 2), fill(bias, 3), fill(B2, 4);
    log << log_.str();
    Buffer A_stored = A;
    if (a_km_) { // the same values, stored K x M
      A_stored = Buffer({K_, M_}, in_type_);
      for (int r = 0; r < M_; ++r)
        for (int q = 0; q < K_; ++q)
          A_stored.set(static_cast<size_t>(q) * M_ + r, A.get(static_cast<size_t>(r) * K_ + q));
    }
    Buffer B_stored = B;
    if (b_nk_) { // the same values, stored N x K
      B_stored = Buffer({N_, K_}, in_type_);
      for (int q = 0; q < K_; ++q)
        for (int c = 0; c < N_; ++c)
          B_stored.set(static_cast<size_t>(c) * K_ + q, B.get(static_cast<size_t>(q) * N_ + c));
    }
    Buffer A_view = laid_out(A_stored, a_lead_), B_view = laid_out(B_stored, b_lead_);
    // An output view's buffer ends at its last element (one element where
    // the view is empty), the elements between the rows kBetweenRows.
    Buffer out_view = out;
    if (out_lead_) {
      int reach = M_ > 0 && N_ > 0 ? (out_runs() - 1) * out_lead_ + out_run_length() : 1;
      out_view = Buffer({reach}, out_type_);
      for (size_t e = 0; e < out_view.size(); ++e)
        out_view.set(e, kBetweenRows);
    }
    Arguments args{{A_->name(), A_view}, {bias_->name(), bias}, {pM_->name(), M_}, {pN_->name(), N_}};
    if (kind_ == 1) {
      args.emplace(B_->name(), B_view);
      args.emplace(pK_->name(), K_);
      if (u_)
        args.emplace(B2_->name(), B2);
    }
    // The buffers are made to the algorithm's declarations: once the nest
    // is accepted, a UserError binding them is the compiler's fault.
    try {
      p.realize_on_cpu(args, out_lead_ ? out_view : out);
    } catch (const UserError &e) {
      if (out_overlaps_) {
        bool untouched = true;
        for (size_t n = 0; n < out_view.size(); ++n)
          untouched &= out_view.get(n) == kBetweenRows;
        if (std::string(e.what()).find("is a view whose elements overlap") != std::string::npos && untouched)
          return Outcome::UserError;
        // M, N and K sharing a name are one size: the buffers made to
        // different sizes may be refused first, before anything is written.
        if (sizes_may_differ_ && untouched)
          throw;
        log << "an overlapping output view refused for another reason, or after writing: " << e.what() << "\n";
        return Outcome::Wrong;
      }
      if (sizes_may_differ_)
        throw;
      log << "accepted the schedule, then refused its buffers: " << e.what() << "\n" << nest;
      return Outcome::Wrong;
    }
    if (out_overlaps_) {
      log << "an output view whose runs overlap (" << out_lead_ << " apart, " << out_run_length()
          << " long) was accepted\n"
          << nest;
      return Outcome::Wrong;
    }
    if (out_lead_) {
      for (size_t e = 0; e < out_view.size(); ++e) {
        size_t run = e / static_cast<size_t>(out_lead_), along = e % static_cast<size_t>(out_lead_);
        size_t r = out_column_major_ ? along : run, c = out_column_major_ ? run : along;
        if (M_ > 0 && along < static_cast<size_t>(out_run_length()))
          out.set(r * N_ + c, out_view.get(e));
        else if (out_view.get(e) != kBetweenRows) {
          log << "the output view's element " << e << ", between its rows, was written: " << out_view.get(e) << "\n"
              << nest;
          return Outcome::Wrong;
        }
      }
    }
    // The reference, in double, from the values the buffers hold.
    bool tf32 = has_mma_ && in_type_ == Float(32);
    // An 8-bit output keeps 3 mantissa bits (e4m3): 2^-4 relative.
    double tol = out_type_ == Float(32)    ? (tf32 ? 2e-3 : 1e-4)
                 : out_type_ == BFloat(16) ? 1e-2
                 : out_type_.is_fp8()      ? 7e-2
                                           : 2e-3;
    for (int i = 0; i < M_; ++i)
      for (int j = 0; j < N_; ++j) {
        double expected, scale;
        if (kind_ == 0) {
          expected = A.get(static_cast<size_t>(i) * N_ + j) * 2.0 + bias.get(j);
          scale = std::fabs(expected) + 1;
        } else {
          double sum = 0, abs_sum = 0;
          for (int k = 0; k < K_; ++k) {
            double term = double(A.get(static_cast<size_t>(i) * K_ + k)) * B.get(static_cast<size_t>(k) * N_ + j);
            sum += term, abs_sum += std::fabs(term);
          }
          if (post_stage_)
            sum = sum * 0.5 + 1.0, abs_sum = abs_sum * 0.5 + 1.0;
          expected = act(epilogue_, sum + bias.get(j));
          scale = abs_sum + std::fabs(bias.get(j)) + 1;
          if (u_) {
            double second = 0, abs_second = 0;
            for (int k = 0; k < K_; ++k) {
              double term = double(A.get(static_cast<size_t>(i) * K_ + k)) * B2.get(static_cast<size_t>(k) * N_ + j);
              second += term, abs_second += std::fabs(term);
            }
            expected *= second;
            scale *= abs_second + 1;
          }
        }
        double got = out.get(static_cast<size_t>(i) * N_ + j);
        if (!(std::fabs(got - expected) <= tol * scale)) {
          log << "wrong at (" << i << ", " << j << "): got " << got << ", expected " << expected << "\n" << nest;
          return Outcome::Wrong;
        }
      }
    if (nest.find("gpu_block") == std::string::npos)
      return Outcome::Matched;
    try {
      p.ptx();
      if (!ptxas_available())
        return Outcome::Matched; // PTX made, not assembled
      p.assemble();
      return Outcome::MatchedPtx;
    } catch (const UserError &e) {
      std::string what = e.what();
      if (what.find("ptxas") != std::string::npos) {
        log << "ptxas: " << what << "\n";
        return Outcome::Ptxas;
      }
      log << "gpu: " << what << "\n";
      return Outcome::GpuRejected;
    }
  }
};

/// Runs case `seed` in a child process with a time limit; fills `log` with
/// the case's program and what happened.
inline Outcome run_isolated(uint64_t seed, std::string &log, int timeout_s = 60) {
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0)
    return Outcome::Other;
  pid_t child = fork();
  if (child == 0) {
    close(pipe_fd[0]);
    std::ostringstream text;
    Outcome o = Case(seed).run(text);
    std::string s = text.str();
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = write(pipe_fd[1], s.data() + off, s.size() - off);
      if (n <= 0)
        break;
      off += static_cast<size_t>(n);
    }
    close(pipe_fd[1]);
    _exit(static_cast<int>(o));
  }
  close(pipe_fd[1]);
  log.clear();
  auto start = std::chrono::steady_clock::now();
  auto left_ms = [&] {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return static_cast<int>(std::max<long long>(0, timeout_s * 1000LL - spent.count()));
  };
  // Read the log as it comes (a long one must not block the child) until the
  // child closes its end or the deadline passes.
  char buf[4096];
  for (;;) {
    pollfd fd{pipe_fd[0], POLLIN, 0};
    if (poll(&fd, 1, left_ms()) <= 0)
      break; // the deadline
    ssize_t n = read(pipe_fd[0], buf, sizeof buf);
    if (n <= 0)
      break;
    log.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  bool done = false;
  for (;;) {
    if (waitpid(child, &status, WNOHANG) == child) {
      done = true;
      break;
    }
    if (left_ms() == 0) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    usleep(2000);
  }
  close(pipe_fd[0]);
  if (!done)
    return Outcome::Hang;
  if (WIFSIGNALED(status))
    return Outcome::Crash;
  int code = WEXITSTATUS(status);
  return code <= static_cast<int>(Outcome::Other) ? static_cast<Outcome>(code) : Outcome::Crash;
}

} // namespace coalesce::fuzz
