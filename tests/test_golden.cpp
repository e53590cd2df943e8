// The printed loop nest of every catalog schedule, compared with its golden
// file in tests/golden/<schedule>.txt. The goldens are documentation too:
// they show what each schedule does. After an intended change to lowering or
// printing, refresh them with
//   COALESCE_UPDATE_GOLDEN=1 ./test_golden
// and read the diff before committing it.

#include "examples/Schedules.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

std::string golden_path(const std::string &schedule) {
  return std::string(COALESCE_SOURCE_DIR) + "/tests/golden/" + schedule + ".txt";
}

bool updating_goldens() {
  const char *flag = std::getenv("COALESCE_UPDATE_GOLDEN");
  return flag && std::string(flag) == "1";
}

// Reads the whole file into `contents`; false if it cannot be opened.
bool read_file(const std::string &path, std::string &contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  contents = text.str();
  return true;
}

} // namespace

TEST_CASE("every catalog schedule prints its golden loop nest") {
  const bool update = updating_goldens();
  for (const ExampleSchedule &schedule : example_schedules()) {
    INFO("schedule '", schedule.name, "', golden file ", golden_path(schedule.name));
    std::string nest = Pipeline(scheduled_gemm(schedule).out).loop_nest();
    if (update) {
      std::ofstream(golden_path(schedule.name), std::ios::binary) << nest;
      MESSAGE("COALESCE_UPDATE_GOLDEN=1: rewrote ", golden_path(schedule.name));
      continue;
    }
    std::string golden;
    REQUIRE_MESSAGE(read_file(golden_path(schedule.name), golden),
                    "missing golden file; run with COALESCE_UPDATE_GOLDEN=1 to create it");
    CHECK(nest == golden);
  }
}

TEST_CASE("no catalog schedule prints a store to 'out' inside a reduction loop") {
  // The rule the goldens document, checked on the printed text itself: no
  // store to out is indented under a loop marked as a reduction.
  for (const ExampleSchedule &schedule : example_schedules()) {
    INFO("schedule '", schedule.name, "'");
    std::istringstream lines(Pipeline(scheduled_gemm(schedule).out).loop_nest());
    std::vector<size_t> reduction_indents; // indents of the enclosing reduction loops
    std::string line;
    int stores = 0;
    while (std::getline(lines, line)) {
      size_t indent = line.find_first_not_of(' ');
      if (indent == std::string::npos)
        continue;
      while (!reduction_indents.empty() && indent <= reduction_indents.back())
        reduction_indents.pop_back();
      if (line.find("# reduction of") != std::string::npos)
        reduction_indents.push_back(indent);
      if (line.compare(indent, 4, "out[") == 0) {
        ++stores;
        CHECK_MESSAGE(reduction_indents.empty(), "store inside a reduction loop: ", line);
      }
    }
    CHECK(stores >= 1);
  }
}
