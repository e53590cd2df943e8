#pragma once
// The algorithm a fuzz case draws (see FuzzCase.h): elementwise, or a GEMM
// with an epilogue, sometimes a second sum over the same A, inputs and
// outputs stored in every layout the DSL takes, names that collide.

#include "fuzz/FuzzCase.h"

#include <algorithm>

namespace coalesce::fuzz {

class AlgorithmDraws : public CaseState {
protected:
  using CaseState::CaseState;

  // A third of the cases fix some of M, N and K in the algorithm; half of
  // those first round M and N (and K) up to whole tiles of a size the
  // schedules draw, where the lowering leaves no guard at all.
  void fix_extents(std::ostream &log) {
    if (!extents_chance(30))
      return;
    fixed_m_ = extents_chance(75), fixed_n_ = extents_chance(75), fixed_k_ = extents_chance(75);
    if (extents_chance(50)) {
      static const int tiles[] = {16, 32, 64, 128}, k_steps[] = {8, 16, 32, 64};
      int tile = tiles[extents_rng_() % 4], k_step = k_steps[extents_rng_() % 4];
      auto whole = [](int extent, int size) { return (extent + size - 1) / size * size; };
      M_ = whole(M_, tile), N_ = whole(N_, tile), K_ = whole(K_, k_step);
    }
    log << "extents fixed:" << (fixed_m_ ? " M" : "") << (fixed_n_ ? " N" : "") << (fixed_k_ ? " K" : "") << "\n";
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
    fix_extents(log);
    pM_ = std::make_unique<Param>(name("M"));
    pN_ = std::make_unique<Param>(name("N"));
    pK_ = std::make_unique<Param>(name("K"));
    sizes_may_differ_ = pM_->name() == pN_->name() || pM_->name() == pK_->name() || pN_->name() == pK_->name();
    i_ = std::make_unique<Var>(name("i"));
    j_ = std::make_unique<Var>(name("j"));
    Var &i = *i_, &j = *j_;
    out_ = std::make_unique<Func>(name("out"));
    bias_ = std::make_unique<Input>(name("bias"), Float(32), std::vector<Expr>{extent_n()});
    log << "names: M " << pM_->name() << ", N " << pN_->name() << ", K " << pK_->name() << ", i " << i_->name()
        << ", j " << j_->name() << ", out " << out_->name() << ", bias " << bias_->name() << "\n";
    log << "types in " << in_type_ << " out " << out_type_ << ", M N K " << M_ << " " << N_ << " " << K_ << "\n";
    if (kind_ == 0) {
      A_ = input(name("A"), {extent_m(), extent_n()}, N_, a_lead_);
      Expr v = widen((*A_)(i, j)) * 2.0f + (*bias_)(j);
      (*out_)(i, j) = out_type_ == Float(32) ? v : cast(out_type_, v);
      log << "out(i, j) = A(i, j) * 2 + bias(j)\n";
    } else {
      a_km_ = chance(12);
      if (a_km_)
        log << "A stored K x M, read A(k, i)\n";
      A_ = a_km_ ? input(name("A"), {extent_k(), extent_m()}, M_, a_lead_)
                 : input(name("A"), {extent_m(), extent_k()}, K_, a_lead_);
      b_nk_ = chance(15);
      if (b_nk_)
        log << "B stored N x K, read B(j, k)\n";
      B_ = b_nk_ ? input(name("B"), {extent_n(), extent_k()}, K_, b_lead_)
                 : input(name("B"), {extent_k(), extent_n()}, N_, b_lead_);
      k_ = std::make_unique<RDom>(0, extent_k(), name("k"));
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
      Expr v = epilogue_ == 0   ? relu(biased)
               : epilogue_ == 1 ? gelu(biased)
               : epilogue_ == 2 ? biased
                                : gelu_tanh(biased);
      if (!cycle && chance(20)) {
        B2_ = std::make_unique<Input>(name("B2"), in_type_, std::vector<Expr>{extent_k(), extent_n()});
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
  }
};

} // namespace coalesce::fuzz
