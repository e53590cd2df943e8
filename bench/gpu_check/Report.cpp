#include "bench/gpu_check/Report.h"

#include <cstdio>
#include <limits>
#include <vector>

namespace coalesce::gpu_check {
namespace {

struct Row {
  std::string name, shape, vs;
  double error = 0, tolerance = 0;
  bool pass = false, skipped = false;
};

std::vector<Row> &rows() {
  static std::vector<Row> all;
  return all;
}

} // namespace

bool record(const std::string &name, const std::string &shape, const std::string &vs, const Outcome &o) {
  const bool skipped = !o.note.empty() && o.failure.empty();
  const bool pass =
      skipped || (o.failure.empty() && o.not_finite == 0 && o.guard_damage == 0 && o.error <= o.tolerance);
  std::printf("check %-34s %-16s vs %-24s ", name.c_str(), shape.c_str(), vs.c_str());
  if (skipped)
    std::printf("not compared: %s", o.note.c_str());
  else if (!o.failure.empty())
    std::printf("ERROR: %s", o.failure.c_str());
  else if (o.ms > 0)
    std::printf("rel error %.3g (tol %.2g), %zu not finite, %zu past-end writes, %.3f ms", o.error, o.tolerance,
                o.not_finite, o.guard_damage, o.ms);
  else
    std::printf("rel error %.3g (tol %.2g)%s", o.error, o.tolerance,
                o.not_finite ? (", " + std::to_string(o.not_finite) + " not finite").c_str() : "");
  if (!o.detail.empty())
    std::printf(" [%s]", o.detail.c_str());
  std::printf(": %s\n", skipped ? "skipped" : pass ? "ok" : "FAIL");
  std::fflush(stdout);
  rows().push_back({name, shape, vs, o.failure.empty() ? o.error : std::numeric_limits<double>::infinity(),
                    o.tolerance, pass, skipped});
  return pass;
}

size_t print_summary(double seconds) {
  size_t failures = 0, skipped = 0;
  std::printf("\n| schedule | shape | vs | rel error | tol | pass |\n|---|---|---|---|---|---|\n");
  for (const Row &r : rows()) {
    failures += r.pass ? 0 : 1;
    skipped += r.skipped ? 1 : 0;
    std::printf("| %s | %s | %s | %.2e | %.1e | %s |\n", r.name.c_str(), r.shape.c_str(), r.vs.c_str(), r.error,
                r.tolerance, r.skipped ? "skipped" : r.pass ? "ok" : "FAIL");
  }
  std::printf("\n%zu checks, %zu failed (%.1f s)%s\n", rows().size() - skipped, failures, seconds,
              skipped ? (", " + std::to_string(skipped) + " not compared").c_str() : "");
  return failures;
}

bool all_passed() {
  for (const Row &r : rows())
    if (!r.pass)
      return false;
  return true;
}

} // namespace coalesce::gpu_check
