#pragma once
// One fuzz case's state (tests/fuzz/ScheduleFuzzer.h): its random source,
// the algorithm it drew (types, shape, names, layouts) and the helpers that
// draw names and inputs. The layers above it each add one part of a case:
// AlgorithmDraws (FuzzAlgorithm.h) draws the algorithm, ScheduleDraws
// (FuzzSchedules.h) its schedule, Oracle (FuzzOracle.h) runs it and judges
// the outcome. They draw from one generator in that order, so that a seed
// names the same case whatever the files hold.

#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/Func.h"
#include "dsl/FuncContents.h"
#include "dsl/IROperator.h"
#include "runtime/Buffer.h"

#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace coalesce::fuzz {

class CaseState {
protected:
  explicit CaseState(uint64_t seed)
      : rng_(seed), extents_rng_(seed ^ 0x9e3779b97f4a7c15ull), recipe_rng_(seed ^ 0xc2b2ae3d27d4eb4full) {}

  std::mt19937_64 rng_;
  // The extents fixed in the algorithm draw from a generator of their own,
  // so that the draws of every other part of a seed's case stay as they were.
  std::mt19937_64 extents_rng_;
  bool extents_chance(int percent) { return static_cast<int>(extents_rng_() % 100) < percent; }
  // Likewise the schedules drawn from the tensor-core recipe's knobs
  // (FuzzSchedules.h, recipe_schedule).
  std::mt19937_64 recipe_rng_;
  int recipe_pick(int n) { return static_cast<int>(recipe_rng_() % static_cast<uint64_t>(n)); }
  bool recipe_chance(int percent) { return recipe_pick(100) < percent; }
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  template <typename T> const T &one_of(const std::vector<T> &v) { return v[pick(static_cast<int>(v.size()))]; }

  // Names: mostly the usual, sometimes one that collides with another name,
  // a Param, an Input or an internal-looking one.
  std::vector<std::string> pool_ = {"i",  "j",     "k",   "x",   "y", "A",  "B",        "M",       "N",
                                    "K",  "bias",  "acc", "out", "t", "ti", "A_shared", "B_fetch", "coalesce_out",
                                    "s0", "tanhf", "ko",  "ki",  "bi"};
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
  // M, N and K fixed in the algorithm (the number, not its Param), each
  // drawn on its own: the lowering then knows which tiles are whole and
  // leaves no guard around them.
  bool fixed_m_ = false, fixed_n_ = false, fixed_k_ = false;
  Expr extent_m() const { return fixed_m_ ? Expr(M_) : Expr(*pM_); }
  Expr extent_n() const { return fixed_n_ ? Expr(N_) : Expr(*pN_); }
  Expr extent_k() const { return fixed_k_ ? Expr(K_) : Expr(*pK_); }
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
  bool b_nk_ = false;             // B stored N x K (nn.Linear's weight), read B(j, k)
  int out_lead_ = 0;              // 0: dense
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
  // The output's extents as a bound() on it set them (-1: not bounded):
  // where the output is a view, a bound that differs from M or N is the
  // region the kernel writes, and the buffers may hold it.
  int out_rows_bound_ = -1, out_columns_bound_ = -1;
  int out_rows() const { return out_rows_bound_ >= 0 ? out_rows_bound_ : M_; }
  int out_columns() const { return out_columns_bound_ >= 0 ? out_columns_bound_ : N_; }
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
  /// The rows x columns `m` stored columns x rows, the same values.
  static Buffer transposed(const Buffer &m) {
    const int rows = m.shape()[0], columns = m.shape()[1];
    Buffer t({columns, rows}, m.type());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c)
        t.set(static_cast<size_t>(c) * rows + r, m.get(static_cast<size_t>(r) * columns + c));
    return t;
  }
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
};

} // namespace coalesce::fuzz
