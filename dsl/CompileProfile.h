#pragma once
// Where schedule-to-PTX time goes: named phases (lowering, IR emission,
// libdevice link, each optimization pass, NVPTX code generation) timed into
// the profile active on this thread. Nothing is timed, and nothing costs
// more than a null check, unless a profile is active.
//
// COALESCE_TIME_COMPILE=1 makes Pipeline::ptx activate one for each fresh
// compilation and print it to stderr; bench/compile_time.cpp takes medians.

#include <chrono>
#include <string>
#include <vector>

namespace coalesce {

class CompileProfile {
public:
  /// Wall time, and this thread's CPU time: on a machine shared with other
  /// jobs the CPU time is the steadier of the two.
  struct Phase {
    std::string name;
    double ms = 0;
    double cpu_ms = 0;
  };

  /// Adds to the phase `name` (created, in first-seen order, on first use).
  void add(const std::string &name, double ms, double cpu_ms);
  const std::vector<Phase> &phases() const { return phases_; }
  /// The sums over every phase.
  double total_ms() const;
  double total_cpu_ms() const;
  /// One line per phase, "  name  12.3 ms", then the total; passes of the
  /// optimizer under `min_ms` are summed into one line so the list stays short.
  std::string str(double min_ms = 0.2) const;

private:
  std::vector<Phase> phases_;
};

/// The profile compile steps on this thread add to, or null.
CompileProfile *active_compile_profile();

/// Makes `profile` the active one on this thread for this object's lifetime.
class ScopedCompileProfile {
public:
  explicit ScopedCompileProfile(CompileProfile *profile);
  ~ScopedCompileProfile();
  ScopedCompileProfile(const ScopedCompileProfile &) = delete;
  ScopedCompileProfile &operator=(const ScopedCompileProfile &) = delete;

private:
  CompileProfile *previous_;
};

/// Times its own lifetime into the active profile's phase `name`, if any.
class PhaseTimer {
public:
  explicit PhaseTimer(const char *name);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer &) = delete;
  PhaseTimer &operator=(const PhaseTimer &) = delete;

private:
  const char *name_;
  CompileProfile *profile_;
  std::chrono::steady_clock::time_point start_;
  double start_cpu_ms_ = 0;
};

/// This thread's CPU time so far, in milliseconds.
double thread_cpu_ms();

/// Whether COALESCE_TIME_COMPILE asks for the breakdown on stderr.
bool compile_timing_requested();

} // namespace coalesce
