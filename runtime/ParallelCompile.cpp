#include "runtime/ParallelCompile.h"

#include "dsl/Error.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace coalesce {

int default_compile_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void run_in_parallel(size_t n, int threads, const std::function<void(size_t)> &job) {
  if (threads <= 0)
    threads = default_compile_threads();
  size_t workers = std::min<size_t>(static_cast<size_t>(threads), n);
  if (workers <= 1) {
    for (size_t index = 0; index < n; ++index)
      job(index);
    return;
  }
  // Work is handed out one index at a time: compile times differ by an
  // order of magnitude between schedules, so fixed slices would leave
  // threads idle.
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t index = next++; index < n; index = next++)
        job(index);
    });
  for (std::thread &thread : pool)
    thread.join();
}

std::vector<CompileOutcome> compile_ptx_in_parallel(std::vector<Pipeline> &pipelines, const GpuTarget &target,
                                                    int threads) {
  std::vector<CompileOutcome> outcomes(pipelines.size());
  run_in_parallel(pipelines.size(), threads, [&](size_t index) {
    CompileOutcome &outcome = outcomes[index];
    try {
      outcome.ptx = pipelines[index].ptx(target);
    } catch (const UserError &error) {
      outcome.error = error.what();
      outcome.rule = error.rule().empty() ? "codegen" : error.rule();
    } catch (const InternalError &error) {
      // A compiler bug, reported as this item's outcome so that the other
      // compilations (and a search over them) still finish.
      outcome.error = error.what();
      outcome.rule = "internal";
    } catch (const std::exception &error) {
      outcome.error = std::string("unexpected error: ") + error.what();
      outcome.rule = "internal";
    }
  });
  return outcomes;
}

} // namespace coalesce
