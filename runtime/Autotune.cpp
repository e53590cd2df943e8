#include "runtime/Autotune.h"

#include "dsl/Error.h"
#include "runtime/ParallelCompile.h"
#include "runtime/TuneProgress.h"
#include "runtime/TuningSpace.h"
#include "scheduler/Lower.h"
#include "scheduler/SpecializeSizes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <tuple>

namespace coalesce {

const char *candidate_status_name(CandidateStatus status) {
  switch (status) {
  case CandidateStatus::Illegal: return "illegal";
  case CandidateStatus::NotSampled: return "not sampled";
  case CandidateStatus::CompileError: return "compile error";
  case CandidateStatus::Failed: return "failed";
  case CandidateStatus::Timed: return "timed";
  }
  return "?";
}

const GemmCandidate &AutotuneResult::best_candidate() const {
  if (!best)
    user_error("autotuning found no candidate that compiled, ran and matched the reference:\n", summary());
  return results[*best].candidate;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string ms_text(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", ms);
  return text;
}

std::string by_rule(const std::map<std::string, int> &counts) {
  std::string text;
  for (const auto &[rule, count] : counts)
    text += str_cat(text.empty() ? "" : ", ", rule, " ", count);
  return text;
}

// Step 1: schedule and lower each candidate (no code generation), on every
// core; marks the refused ones Illegal with their rule.
void check_legality(const GemmProblem &problem, AutotuneResult &result, int threads) {
  run_in_parallel(result.results.size(), threads, [&](size_t index) {
    CandidateResult &r = result.results[index];
    try {
      Func out = build_scheduled_gemm(problem, r.candidate);
      lower_gpu_nest(out);
      r.status = CandidateStatus::NotSampled; // legal; step 2 picks which to compile
    } catch (const UserError &error) {
      r.status = CandidateStatus::Illegal;
      r.rule = error.rule().empty() ? "schedule" : error.rule();
      r.error = error.what();
    } catch (const InternalError &error) {
      r.status = CandidateStatus::Illegal;
      r.rule = "internal";
      r.error = error.what();
    }
  });
}

// Compiles `pipelines` on a pool of threads in the background, finishes each
// with `finish` on the same thread, and hands each finished index to the
// consumer in the order they finish.
class BackgroundCompiler {
public:
  using Finish = std::function<void(size_t, CompileOutcome &)>;
  /// `sizes`: the launches' scalar arguments; each candidate compiles what
  /// a launch at them runs (the program specialized for those that are
  /// multiples of 16, 8 or 4, or the general one).
  BackgroundCompiler(std::vector<Pipeline> &pipelines, const GpuTarget &target, int threads,
                     std::map<std::string, int64_t> sizes, Finish finish)
      : outcomes_(pipelines.size()) {
    thread_ = std::thread([this, &pipelines, target, threads, sizes, finish] {
      run_in_parallel(pipelines.size(), threads, [&](size_t index) {
        CompileOutcome outcome;
        auto start = std::chrono::steady_clock::now();
        try {
          Pipeline &pipeline = pipelines[index];
          // The finished program first (a PTX cache hit would skip it), so
          // that loading on the consumer's thread does not lower again.
          SizeMultiples multiples = specializable_sizes(pipeline.gpu_program(), sizes);
          outcome.ptx = multiples.empty() ? pipeline.ptx(target) : pipeline.specialized_ptx(target, multiples);
        } catch (const UserError &error) {
          outcome.error = error.what();
          outcome.rule = error.rule().empty() ? "codegen" : error.rule();
        } catch (const std::exception &error) {
          outcome.error = error.what();
          outcome.rule = "internal";
        }
        double generated = seconds_since(start);
        if (outcome.ok())
          finish(index, outcome);
        double loaded = seconds_since(start) - generated;
        std::lock_guard<std::mutex> lock(mutex_);
        generate_s_ += generated;
        load_s_ += loaded;
        outcomes_[index] = std::move(outcome);
        finished_.push_back(index);
        ready_.notify_one();
      });
    });
  }
  ~BackgroundCompiler() { thread_.join(); }
  BackgroundCompiler(const BackgroundCompiler &) = delete;
  BackgroundCompiler &operator=(const BackgroundCompiler &) = delete;

  /// The next finished index (blocks until there is one) and its outcome.
  std::pair<size_t, CompileOutcome> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !finished_.empty(); });
    size_t index = finished_.front();
    finished_.pop_front();
    return {index, std::move(outcomes_[index])};
  }

  /// Code generation and the finishing step, summed over the threads so far.
  std::pair<double, double> thread_seconds() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {generate_s_, load_s_};
  }

private:
  double generate_s_ = 0, load_s_ = 0;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<size_t> finished_;
  std::vector<CompileOutcome> outcomes_;
  std::thread thread_;
};

} // namespace

AutotuneResult autotune_gemm(const GemmProblem &problem, const std::vector<GemmCandidate> &candidates,
                             const TimingSteps &timing, const AutotuneOptions &options) {
  problem.validate();
  if (!timing.rank)
    user_error("autotune_gemm: no timing step (TimingSteps::rank) was given");
  auto start = std::chrono::steady_clock::now();
  AutotuneResult result;
  result.problem = problem;
  result.threads = options.threads > 0 ? options.threads : default_compile_threads();
  for (const GemmCandidate &candidate : candidates)
    result.results.push_back(CandidateResult{candidate, CandidateStatus::Illegal, "", "", 0});

  check_legality(problem, result, result.threads);
  std::vector<size_t> legal;
  for (size_t index = 0; index < result.results.size(); ++index) {
    const CandidateResult &r = result.results[index];
    if (r.status == CandidateStatus::Illegal)
      ++result.illegal_by_rule[r.rule];
    else
      legal.push_back(index);
  }
  result.legal = legal.size();
  result.legality_s = seconds_since(start);

  // Step 2: the candidates to compile, spread over the legal ones (the
  // default, when legal, first).
  std::vector<size_t> chosen;
  for (size_t n : spread_indices(legal.size(), options.max_candidates))
    chosen.push_back(legal[n]);
  std::vector<Pipeline> pipelines;
  pipelines.reserve(chosen.size());
  for (size_t index : chosen)
    pipelines.emplace_back(build_scheduled_gemm(problem, result.results[index].candidate));

  auto search_start = std::chrono::steady_clock::now();
  TuneProgress progress(chosen.size(), options.progress);
  progress.update(0, "");
  {
    // Each compile thread also prepares its candidate (TimingSteps::prepare).
    auto prepare = [&](size_t slot, CompileOutcome &outcome) {
      if (!timing.prepare)
        return;
      CompiledCandidate compiled{chosen[slot], result.results[chosen[slot]].candidate, pipelines[slot],
                                 options.target};
      try {
        timing.prepare(compiled);
      } catch (const UserError &error) {
        outcome.error = error.what();
        outcome.rule = "load";
      } catch (const std::exception &error) { // never out of a pool thread
        outcome.error = error.what();
        outcome.rule = "internal";
      }
    };
    BackgroundCompiler compiler(pipelines, options.target, result.threads,
                                {{"M", problem.M}, {"N", problem.N}, {"K", problem.K}}, prepare);
    for (size_t done = 0; done < chosen.size(); ++done) {
      auto waiting = std::chrono::steady_clock::now();
      auto [slot, outcome] = compiler.next();
      result.wait_s += seconds_since(waiting);
      CandidateResult &r = result.results[chosen[slot]];
      if (!outcome.ok()) {
        bool load = outcome.rule == "load"; // compiled, but TimingSteps::prepare failed
        r.status = load ? CandidateStatus::Failed : CandidateStatus::CompileError;
        r.rule = outcome.rule;
        r.error = outcome.error;
        ++result.failed_by_rule[load ? outcome.rule : "compile:" + outcome.rule];
      } else {
        CompiledCandidate compiled{chosen[slot], r.candidate, pipelines[slot], options.target};
        auto ranking = std::chrono::steady_clock::now();
        Measurement m = timing.rank(compiled);
        result.rank_s += seconds_since(ranking);
        if (m.ok) {
          r.status = CandidateStatus::Timed;
          r.ms = m.ms;
          ++result.timed;
          if (!result.best || m.ms < result.results[*result.best].ms)
            result.best = chosen[slot];
        } else {
          r.status = CandidateStatus::Failed;
          r.rule = m.rule.empty() ? "measure" : m.rule;
          r.error = m.error;
          ++result.failed_by_rule[r.rule];
        }
      }
      progress.update(done + 1, result.best ? ms_text(result.results[*result.best].ms) : std::string());
    }
    std::tie(result.generate_s, result.load_s) = compiler.thread_seconds();
  }
  progress.finish();
  if (!result.results.empty() && result.results[0].status == CandidateStatus::Timed)
    result.default_ms = result.results[0].ms;

  // Step 3: the winner, re-timed with the full protocol.
  if (result.best) {
    result.best_ms = result.results[*result.best].ms;
    if (timing.confirm) {
      size_t slot = static_cast<size_t>(std::find(chosen.begin(), chosen.end(), *result.best) - chosen.begin());
      CompiledCandidate compiled{*result.best, result.results[*result.best].candidate, pipelines[slot],
                                 options.target};
      auto confirming = std::chrono::steady_clock::now();
      Measurement m = timing.confirm(compiled);
      result.confirm_s = seconds_since(confirming);
      if (!m.ok)
        user_error("autotuning: the winner ", compiled.candidate.str(), " failed its final timing: ", m.error);
      result.best_ms = m.ms;
    }
  }
  result.search_s = seconds_since(search_start);
  result.total_s = seconds_since(start);
  return result;
}

std::string AutotuneResult::summary() const {
  size_t illegal = 0;
  for (const auto &entry : illegal_by_rule)
    illegal += static_cast<size_t>(entry.second);
  size_t compiled = 0;
  for (const CandidateResult &r : results)
    compiled += r.status == CandidateStatus::Timed || r.status == CandidateStatus::Failed ||
                r.status == CandidateStatus::CompileError;
  std::string text = str_cat("autotune ", problem.str(), ": ", results.size(), " candidates, ", illegal,
                             " refused by the legality rules, ", legal, " legal, ", compiled, " compiled, ", timed,
                             " timed\n");
  if (!illegal_by_rule.empty())
    text += "  refused by rule: " + by_rule(illegal_by_rule) + "\n";
  if (!failed_by_rule.empty())
    text += "  failed: " + by_rule(failed_by_rule) + "\n";
  if (default_ms)
    text += str_cat("  default: ", results[0].candidate.str(), ": ", ms_text(*default_ms), "\n");
  if (best) {
    // The ratio compares quick timings; the final timing (the full protocol,
    // the L2 flushed) is longer, so it is named as such beside them.
    text += str_cat("  best:    ", results[*best].candidate.str(), ": ", ms_text(results[*best].ms));
    if (default_ms && results[*best].ms > 0) {
      char ratio[48];
      std::snprintf(ratio, sizeof ratio, " (%.2fx the default, quick timings)", *default_ms / results[*best].ms);
      text += ratio;
    }
    if (best_ms != results[*best].ms)
      text += str_cat("; ", ms_text(best_ms), " in the final timing");
    text += "\n";
  } else {
    text += "  no candidate could be timed\n";
  }
  char took[320];
  std::snprintf(took, sizeof took,
                "  took %.1f s: legality %.1f s, compile and time %.1f s, %d compile threads (over them: code "
                "generation %.1f s, loading %.1f s); timing: ranking %.1f s, waiting for compiles %.1f s, the "
                "winner %.1f s\n",
                total_s, legality_s, search_s, threads, generate_s, load_s, rank_s, wait_s, confirm_s);
  text += took;
  return text;
}

} // namespace coalesce
