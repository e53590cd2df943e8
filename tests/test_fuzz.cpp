// The schedule fuzzer (tests/fuzz/ScheduleFuzzer.h): a fixed range of seeds
// in CI, any range through scripts/fuzz.sh. Every case must end in a
// UserError or match the float64 reference (and assemble with ptxas when
// GPU-mapped); the outcome counts are printed.
//
// COALESCE_FUZZ_FIRST / COALESCE_FUZZ_CASES choose the seeds (default: 0,
// 1000); COALESCE_FUZZ_VERBOSE=1 prints every case's program.

#include <doctest/doctest.h>

#include "fuzz/ScheduleFuzzer.h"

#include <cstdlib>
#include <iostream>

using namespace coalesce;

namespace {

uint64_t env_or(const char *name, uint64_t fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::strtoull(value, nullptr, 10) : fallback;
}

} // namespace

TEST_CASE("fuzzed schedules end in a UserError or the right result") {
  uint64_t first = env_or("COALESCE_FUZZ_FIRST", 0), cases = env_or("COALESCE_FUZZ_CASES", 1000);
  bool verbose = env_or("COALESCE_FUZZ_VERBOSE", 0) != 0;
  std::map<std::string, int> counts;
  for (uint64_t seed = first; seed < first + cases; ++seed) {
    std::string log;
    fuzz::Outcome outcome = fuzz::run_isolated(seed, log);
    ++counts[fuzz::outcome_name(outcome)];
    if (verbose || fuzz::is_failure(outcome))
      std::cout << "seed " << seed << ": " << fuzz::outcome_name(outcome) << "\n" << log << std::endl;
    CHECK_MESSAGE(!fuzz::is_failure(outcome), "seed " << seed << ": " << fuzz::outcome_name(outcome));
  }
  std::cout << "fuzz seeds [" << first << ", " << first + cases << "):";
  for (const auto &[name, count] : counts)
    std::cout << " " << name << "=" << count;
  std::cout << std::endl;
}
