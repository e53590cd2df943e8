#pragma once
// The GEMM autotuner. For one problem and a list of candidates (usually
// enumerate_candidates over a TuningSpace, runtime/TuningSpace.h):
//   1. legality: each candidate is scheduled and lowered without code
//      generation (lower_gpu_nest: every rule of the library); refused ones
//      are counted by rule (UserError::rule) and skipped;
//   2. the legal ones (at most max_candidates, spread over the space, the
//      default first) are compiled to PTX on every core
//      (runtime/ParallelCompile.h) while the calling thread measures each
//      as soon as it is compiled;
//   3. measuring is TimingSteps::rank (on the GPU: a numerical check against
//      a reference, then a short timing); the fastest is re-timed with
//      TimingSteps::confirm (the benchmark's full protocol).
// The timing steps are function objects, so the search runs (and is tested)
// without a GPU.

#include "codegen/GpuTarget.h"
#include "runtime/GemmCandidate.h"
#include "runtime/Pipeline.h"
#include "runtime/TuningProblem.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

/// One timing of one candidate.
struct Measurement {
  bool ok = false;
  double ms = 0;     ///< the median, when ok
  std::string error; ///< why not ok (a wrong result, a failed launch)
  std::string rule;  ///< a short stable reason: "numerics", "launch"
};

/// A compiled candidate, handed to the timing steps: pipeline.ptx(target)
/// is compiled and kept.
struct CompiledCandidate {
  size_t index; ///< in the list given to autotune_gemm
  const GemmCandidate &candidate;
  Pipeline &pipeline;
  const GpuTarget &target;
};

struct TimingSteps {
  /// Optional: runs on the compile threads right after a candidate compiles
  /// (on the GPU it loads the module: the driver's JIT of the PTX is the
  /// slow part of loading, and it runs in parallel there). A UserError from
  /// it fails the candidate with rule "load".
  std::function<void(CompiledCandidate &)> prepare;
  /// A quick, checked timing for ranking, on the calling thread.
  std::function<Measurement(CompiledCandidate &)> rank;
  /// The full protocol, for the winner only; empty: rank's time stands.
  std::function<Measurement(CompiledCandidate &)> confirm;
};

enum class CandidateStatus {
  Illegal,      ///< refused by a legality rule
  NotSampled,   ///< legal, beyond max_candidates
  CompileError, ///< refused or failed while compiling to PTX
  Failed,       ///< the timing step failed (wrong result, launch failure)
  Timed,
};
const char *candidate_status_name(CandidateStatus status);

struct CandidateResult {
  GemmCandidate candidate;
  CandidateStatus status = CandidateStatus::Illegal;
  std::string rule;  ///< for Illegal, CompileError and Failed
  std::string error; ///< the message, likewise
  double ms = 0;     ///< rank's time, for Timed
};

struct AutotuneOptions {
  GpuTarget target;
  /// Legal candidates compiled and timed at most.
  size_t max_candidates = 50;
  int threads = 0; ///< compile threads; 0: one per hardware thread
  bool progress = false; ///< draw the progress line on stderr (TuneProgress)
};

struct AutotuneResult {
  GemmProblem problem;
  std::vector<CandidateResult> results; ///< one per candidate, in the order given
  std::map<std::string, int> illegal_by_rule; ///< candidates refused by each legality rule
  std::map<std::string, int> failed_by_rule;  ///< compile errors and failed timings, by rule
  size_t legal = 0, timed = 0;
  std::optional<size_t> best; ///< index into results of the winner
  double best_ms = 0;         ///< its time under TimingSteps::confirm (else rank)
  std::optional<double> default_ms; ///< results[0]'s rank time, when it timed
  double legality_s = 0, search_s = 0, total_s = 0;
  /// Where the search's time went: code generation and loading (the
  /// driver's JIT), summed over the compile threads; the timing thread's
  /// ranking of the candidates, its waits for the next compiled one, and
  /// the winner's final timing.
  double generate_s = 0, load_s = 0, rank_s = 0, wait_s = 0, confirm_s = 0;
  int threads = 0;

  /// The winner; a UserError, with summary(), when there is none.
  const GemmCandidate &best_candidate() const;
  /// A few lines: counts, refusals by rule, the default and the winner.
  std::string summary() const;
};

/// Runs the search. result.best is empty when no candidate could be timed
/// (every one illegal or failed); summary() then says why.
AutotuneResult autotune_gemm(const GemmProblem &problem, const std::vector<GemmCandidate> &candidates,
                             const TimingSteps &timing, const AutotuneOptions &options);

} // namespace coalesce
