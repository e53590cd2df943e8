#include "dsl/CompileProfile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace coalesce {

namespace {
thread_local CompileProfile *active = nullptr;
} // namespace

void CompileProfile::add(const std::string &name, double ms, double cpu_ms) {
  for (Phase &phase : phases_)
    if (phase.name == name) {
      phase.ms += ms;
      phase.cpu_ms += cpu_ms;
      return;
    }
  phases_.push_back({name, ms, cpu_ms});
}

double CompileProfile::total_ms() const {
  double total = 0;
  for (const Phase &phase : phases_)
    total += phase.ms;
  return total;
}

double CompileProfile::total_cpu_ms() const {
  double total = 0;
  for (const Phase &phase : phases_)
    total += phase.cpu_ms;
  return total;
}

std::string CompileProfile::str(double min_ms) const {
  std::string text;
  char line[256];
  double small = 0, small_cpu = 0;
  int small_count = 0;
  std::snprintf(line, sizeof line, "  %-44s %8s    %8s\n", "phase", "wall", "CPU");
  text += line;
  for (const Phase &phase : phases_) {
    if (phase.name.rfind("opt: ", 0) == 0 && phase.ms < min_ms) {
      small += phase.ms;
      small_cpu += phase.cpu_ms;
      ++small_count;
      continue;
    }
    std::snprintf(line, sizeof line, "  %-44s %8.2f ms %8.2f ms\n", phase.name.c_str(), phase.ms, phase.cpu_ms);
    text += line;
  }
  if (small_count) {
    char name[64];
    std::snprintf(name, sizeof name, "opt: %d more, each under %.2f ms", small_count, min_ms);
    std::snprintf(line, sizeof line, "  %-44s %8.2f ms %8.2f ms\n", name, small, small_cpu);
    text += line;
  }
  std::snprintf(line, sizeof line, "  %-44s %8.2f ms %8.2f ms\n", "total", total_ms(), total_cpu_ms());
  return text + line;
}

CompileProfile *active_compile_profile() { return active; }

ScopedCompileProfile::ScopedCompileProfile(CompileProfile *profile) : previous_(active) { active = profile; }
ScopedCompileProfile::~ScopedCompileProfile() { active = previous_; }

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec * 1e3 + now.tv_nsec * 1e-6;
}

PhaseTimer::PhaseTimer(const char *name) : name_(name), profile_(active) {
  if (profile_) {
    start_ = std::chrono::steady_clock::now();
    start_cpu_ms_ = thread_cpu_ms();
  }
}

PhaseTimer::~PhaseTimer() {
  if (profile_)
    profile_->add(name_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count(),
                  thread_cpu_ms() - start_cpu_ms_);
}

bool compile_timing_requested() {
  const char *value = std::getenv("COALESCE_TIME_COMPILE");
  return value && *value && std::strcmp(value, "0") != 0;
}

} // namespace coalesce
