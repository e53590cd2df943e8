#pragma once
// The oracle of a fuzz case (see FuzzCase.h): the case ends in a UserError,
// or its CPU result matches a float64 reference (tolerance by element type)
// with nothing written outside an output view, and a GPU-mapped schedule's
// PTX assembles with ptxas, as does the variant a launch at its sizes
// runs (multiples of 16, 8 or 4; where they are none, the variant for
// multiples of 16).

#include "codegen/PtxAssembler.h"
#include "fuzz/FuzzSchedules.h"
#include "runtime/Pipeline.h"
#include "scheduler/LoweredFunc.h"
#include "scheduler/SpecializeSizes.h"

#include <cmath>
#include <map>

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

class Oracle : public ScheduleDraws {
protected:
  using ScheduleDraws::ScheduleDraws;

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
    // The same values, A stored K x M and B N x K where the algorithm reads
    // them so.
    const Buffer A_stored = a_km_ ? transposed(A) : A, B_stored = b_nk_ ? transposed(B) : B;
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
    // A fixed extent's Param is not the algorithm's: it takes no argument.
    Arguments args{{A_->name(), A_view}, {bias_->name(), bias}};
    if (!fixed_m_)
      args.emplace(pM_->name(), M_);
    if (!fixed_n_)
      args.emplace(pN_->name(), N_);
    if (kind_ == 1) {
      args.emplace(B_->name(), B_view);
      if (!fixed_k_)
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
      // The view's elements the kernel writes: the output's extents, or
      // the ones a bound() on it set. Those past M or N hold values of the
      // clamped inputs; only the rest is compared with the reference.
      const size_t rows = static_cast<size_t>(out_rows()), columns = static_cast<size_t>(out_columns());
      for (size_t e = 0; e < out_view.size(); ++e) {
        size_t run = e / static_cast<size_t>(out_lead_), along = e % static_cast<size_t>(out_lead_);
        size_t r = out_column_major_ ? along : run, c = out_column_major_ ? run : along;
        bool written = M_ > 0 && N_ > 0 && r < rows && c < columns &&
                       along < static_cast<size_t>(out_column_major_ ? rows : columns);
        if (written) {
          if (r < static_cast<size_t>(M_) && c < static_cast<size_t>(N_))
            out.set(r * N_ + c, out_view.get(e));
        } else if (out_view.get(e) != kBetweenRows) {
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
    for (int i = 0; i < std::min(M_, out_rows()); ++i)
      for (int j = 0; j < std::min(N_, out_columns()); ++j) {
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
      // And the variant a launch at the case's sizes runs where they are
      // multiples of 16, 8 or 4, else the one for every size a multiple of
      // 16 (scheduler/SpecializeSizes.h).
      std::map<std::string, int64_t> sizes; // the run's scalar arguments
      for (const auto &[name, value] : args)
        if (value.is_scalar())
          sizes.emplace(name, value.scalar());
      SizeMultiples multiples = specializable_sizes(p.gpu_program(), sizes);
      if (multiples.empty())
        for (const Argument &arg : p.gpu_program().args)
          if (!arg.is_buffer())
            multiples[arg.name] = 16;
      const std::string &aligned = p.specialized_ptx(GpuTarget(), multiples);
      if (!ptxas_available())
        return Outcome::Matched; // PTX made, not assembled
      p.assemble();
      assemble_ptx(aligned, GpuTarget());
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

} // namespace coalesce::fuzz
