#include "runtime/TuneProgress.h"

#include "dsl/Error.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace coalesce {

bool progress_wanted(std::FILE *stream) {
  if (const char *flag = std::getenv("COALESCE_PROGRESS"); flag && *flag)
    return std::strcmp(flag, "0") != 0;
  return ::isatty(::fileno(stream)) != 0;
}

TuneProgress::TuneProgress(size_t total, bool enabled, std::FILE *stream)
    : total_(total), enabled_(enabled), stream_(stream), start_(std::chrono::steady_clock::now()) {}

TuneProgress::~TuneProgress() { finish(); }

std::string TuneProgress::line(size_t done, size_t total, const std::string &best, double elapsed_s) {
  constexpr int kWidth = 24;
  int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  // The rate so far predicts the rest; unknown before the first candidate.
  std::string left = done == 0 ? std::string("?")
                                : str_cat(static_cast<long>(std::lround(elapsed_s / static_cast<double>(done) *
                                                                        static_cast<double>(total - done))),
                                          " s");
  return str_cat("autotune [", bar, "] ", done, "/", total, "  best ", best.empty() ? std::string("-") : best,
                 "  left ~", left);
}

void TuneProgress::update(size_t done, const std::string &best) {
  if (!enabled_ || finished_)
    return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r and clear-to-end-of-line: redrawn in place.
  std::fprintf(stream_, "\r%s\033[K", line(done, total_, best, elapsed).c_str());
  std::fflush(stream_);
}

void TuneProgress::finish() {
  if (!enabled_ || finished_)
    return;
  finished_ = true;
  std::fputc('\n', stream_);
  std::fflush(stream_);
}

} // namespace coalesce
