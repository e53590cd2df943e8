#pragma once
// What the tools (coalesce-aot, coalesce-main, the benchmark) call: tune a
// GEMM problem on this machine's GPU and record the winner in a tuning
// database, or read the best known schedule from one.

#include "runtime/Autotune.h"
#include "runtime/GemmCandidate.h"
#include "runtime/TuningDatabase.h"
#include "runtime/TuningProblem.h"

#include <string>

namespace coalesce {

struct TuneRequest {
  GemmProblem problem;
  /// The database to merge the result into ("" : none). It is read before
  /// tuning starts, so a corrupted file stops the run at once.
  std::string database;
  /// The target the caller will compile the winner for ("": any): tuning
  /// on a GPU of another target is refused before it starts.
  std::string target_sm;
  size_t max_candidates = 50;
  int threads = 0; ///< compile threads; 0: one per hardware thread but one (the timing thread's)
  bool progress = false;
};

struct TuneOutcome {
  GemmCandidate best;
  AutotuneResult result;
  GpuIdentity gpu;
};

/// Autotunes request.problem over default_tuning_space on this machine's
/// GPU, merges the winner into request.database (atomically, other entries
/// kept) and returns it. Without a GPU a UserError that says so, before
/// anything is read or written; likewise when no candidate could be timed.
TuneOutcome tune_gemm_on_this_gpu(const TuneRequest &request);

/// The schedule for `problem` from the database at `path` (read whole;
/// a missing or corrupted file is a UserError): the entry for this exact
/// shape, else the nearest of its shape class, for target `sm` (and GPU
/// `gpu_name` when not empty); else default_gemm_candidate. `note` (if
/// given) says which, in one line.
GemmCandidate tuned_or_default_candidate(const std::string &path, const GemmProblem &problem, const std::string &sm,
                                         const std::string &gpu_name, int sm_count, std::string *note = nullptr);

} // namespace coalesce
