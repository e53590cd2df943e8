#pragma once
// The GPU check's results: one line per comparison as it happens, and the
// summary table at the end (scripts/run_on_gpu.sh reads its last line,
// "<n> checks, <f> failed").

#include <cstddef>
#include <string>

namespace coalesce::gpu_check {

struct Outcome {
  double error = 0;         ///< relative error ||got - want|| / ||want||
  double tolerance = 0;     ///< what the comparison allows (and why: in the caller)
  size_t not_finite = 0;    ///< output elements still poisoned or NaN
  size_t guard_damage = 0;  ///< poisoned elements past the output that were overwritten
  double ms = 0;            ///< the run's time (0: not timed)
  std::string detail;       ///< e.g. the tiling
  std::string failure;      ///< an exception's message: the check failed without a number
  std::string note;         ///< non-empty: not a failure, nothing compared (e.g. no cuBLASLt algorithm)
};

/// Prints the line and keeps the row; returns whether it passed.
bool record(const std::string &name, const std::string &shape, const std::string &vs, const Outcome &o);

/// Prints the table and "<n> checks, <f> failed (<s> s)"; returns f.
size_t print_summary(double seconds);

/// Whether every check recorded so far passed.
bool all_passed();

} // namespace coalesce::gpu_check
