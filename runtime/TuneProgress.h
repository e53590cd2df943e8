#pragma once
// The autotuner's progress line on stderr: candidates done of the total,
// the best time so far and an estimate of the time left, redrawn in place.
// Only when stderr is a terminal or when asked (COALESCE_PROGRESS=1), so
// logs and pipes stay clean.

#include <chrono>
#include <cstdio>
#include <string>

namespace coalesce {

/// Whether to draw: COALESCE_PROGRESS=1 forces it, =0 turns it off;
/// otherwise only when `stream` is a terminal.
bool progress_wanted(std::FILE *stream);

class TuneProgress {
public:
  /// Draws on `stream` when `enabled`; otherwise every call does nothing.
  TuneProgress(size_t total, bool enabled, std::FILE *stream = stderr);
  ~TuneProgress();
  TuneProgress(const TuneProgress &) = delete;
  TuneProgress &operator=(const TuneProgress &) = delete;

  /// `done` candidates finished; `best` describes the best so far ("" when
  /// none yet).
  void update(size_t done, const std::string &best);
  /// Ends the line (once; the destructor does it too).
  void finish();

  /// The line update() draws, without the carriage return: for tests.
  static std::string line(size_t done, size_t total, const std::string &best, double elapsed_s);

private:
  size_t total_;
  bool enabled_;
  bool finished_ = false;
  std::FILE *stream_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace coalesce
