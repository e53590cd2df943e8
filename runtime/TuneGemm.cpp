#include "runtime/TuneGemm.h"

#include "dsl/Error.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuCandidateTiming.h"
#include "runtime/ParallelCompile.h"
#include "runtime/TuneProgress.h"
#include "runtime/TuningSpace.h"

#include <algorithm>

namespace coalesce {

TuneOutcome tune_gemm_on_this_gpu(const TuneRequest &request) {
  request.problem.validate();
  std::string why_not;
  if (!gpu::gpu_available(&why_not))
    user_error("autotuning times every candidate on a GPU, and this machine has none (", why_not,
               "); tune on a machine with a GPU, then use its tuning database here");
  GpuIdentity gpu = current_gpu_identity();
  if (!request.target_sm.empty() && request.target_sm != gpu.sm)
    user_error("autotuning times candidates on this machine's GPU (", gpu.name, ", ", gpu.sm,
               "), but the target is ", request.target_sm, ": tune for ", gpu.sm,
               " here, or on a GPU of the target");
  // A bad database fails now, before the search, not after it.
  if (!request.database.empty())
    (void)TuningDatabase::load_or_empty(request.database);

  TuneOutcome outcome;
  outcome.gpu = gpu;
  GpuTarget target = parse_gpu_target(outcome.gpu.sm);
  GemmCandidate first = default_gemm_candidate(request.problem, outcome.gpu.sm, outcome.gpu.sm_count);
  std::vector<GemmCandidate> candidates = enumerate_candidates(
      request.problem, default_tuning_space(request.problem, outcome.gpu.sm, outcome.gpu.sm_count), first);

  AutotuneOptions options;
  options.target = target;
  options.max_candidates = request.max_candidates;
  // One core left to the thread that launches and times: a launch delayed
  // behind a busy core would count in the CUDA-event timing.
  options.threads = request.threads > 0 ? request.threads : std::max(1, default_compile_threads() - 1);
  options.progress = request.progress;
  outcome.result = autotune_gemm(request.problem, candidates, gpu_timing_steps(request.problem), options);
  outcome.best = outcome.result.best_candidate();

  if (!request.database.empty()) {
    TuningRecord record;
    record.gpu = outcome.gpu;
    record.problem = request.problem;
    record.schedule = outcome.best;
    record.ms = outcome.result.best_ms;
    record.default_ms = outcome.result.default_ms.value_or(0);
    record.searched = static_cast<int>(outcome.result.results.size());
    record.legal = static_cast<int>(outcome.result.legal);
    record.timed = static_cast<int>(outcome.result.timed);
    // Read again under the file's lock: another run may have merged its
    // entry since this one read the database.
    TuningDatabase::merge_into_file(request.database, record);
  }
  return outcome;
}

GemmCandidate tuned_or_default_candidate(const std::string &path, const GemmProblem &problem, const std::string &sm,
                                         const std::string &gpu_name, int sm_count, std::string *note) {
  problem.validate();
  TuningDatabase database = TuningDatabase::load(path);
  if (std::optional<TuningMatch> match = database.find(problem, sm, gpu_name)) {
    if (note)
      *note = str_cat("note: tuning database ", path, ": using ", match->exact ? "the entry for " : "the nearest entry of class ",
                      match->exact ? problem.shape() : problem.shape_class(),
                      match->exact ? std::string() : str_cat(" (", match->record->problem.shape(), ")"), ", measured on ",
                      match->record->gpu.name, " (", sm, "): ", match->record->ms, " ms");
    return match->record->schedule;
  }
  if (note)
    *note = tuning_fallback_note(path, problem, sm);
  return default_gemm_candidate(problem, sm, sm_count);
}

} // namespace coalesce
