#pragma once
// What the tests of the ahead-of-time tool share: the tool's paths, a
// temporary directory, running the tool as a user does (exit status, stdout,
// stderr), and building a generated launcher with g++ where there is one.

#include "codegen/GpuTarget.h"
#include "codegen/PtxAssembler.h"
#include "TempDir.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace aot_testing {

namespace fs = std::filesystem;
using namespace coalesce;

inline const std::string kTool = COALESCE_BINARY_DIR "/runtime/aot/coalesce-aot";
inline const std::string kExampleTool = COALESCE_BINARY_DIR "/runtime/aot/coalesce-aot-example";
inline const std::string kExampleGenerators = COALESCE_BINARY_DIR "/runtime/aot/libcoalesce-example-generators.so";
inline const std::string kAotSources = COALESCE_SOURCE_DIR "/runtime/aot";

using coalesce::testing::TempDir;

inline std::string quote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

using coalesce::testing::read_file;
using coalesce::testing::write_file;

struct Result {
  int status = -1;
  std::string out, err;
  bool contains(const std::string &text) const {
    return out.find(text) != std::string::npos || err.find(text) != std::string::npos;
  }
};

/// Runs a shell command in `directory`, capturing stdout and stderr
/// (elsewhere, so that `directory` holds only what the command writes).
inline Result run(const std::string &command, const fs::path &directory) {
  TempDir logs;
  std::string line = "cd " + quote(directory.string()) + " && " + command + " >" +
                     quote(logs / "out") + " 2>" + quote(logs / "err");
  int raw = std::system(line.c_str());
  Result result;
  result.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  result.out = read_file(logs / "out");
  result.err = read_file(logs / "err");
  return result;
}

inline Result run_tool(const std::string &tool, const std::string &args, const fs::path &directory) {
  REQUIRE_MESSAGE(fs::exists(tool), tool, " is missing: build the coalesce-aot targets first");
  return run(quote(tool) + " " + args, directory);
}

inline Result aot(const std::string &args, const fs::path &directory) {
  return run_tool(kTool, args, directory);
}

/// Runs the tool with `args` (writing to the current directory) in an empty
/// directory: it must fail with exit status 1, naming `message`, and write
/// nothing.
inline void check_refused(const std::string &args, const std::string &message) {
  TempDir dir;
  Result refused = aot(args + " --output-dir=.", dir.path);
  INFO(args, "\n", refused.err);
  CHECK(refused.status == 1);
  CHECK(refused.contains(message));
  CHECK(dir.entries().empty());
}

inline bool have_program(const std::string &name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

std::string cuda_include() { return cuda_toolkit_path("include"); }
std::string cuda_stubs() { return cuda_toolkit_path("lib64/stubs"); }

/// g++ and the CUDA headers, to compile a launcher; else says why not.
inline bool can_compile_launchers() {
  if (!have_program("g++")) {
    MESSAGE("skipped: no g++ to compile the generated launcher");
    return false;
  }
  if (!fs::exists(cuda_include() + "/cuda.h")) {
    MESSAGE("skipped: no ", cuda_include(), "/cuda.h to compile the generated launcher");
    return false;
  }
  return true;
}

/// ptxas, to assemble generated PTX; else says why not.
inline bool can_assemble() {
  if (!ptxas_available())
    MESSAGE("skipped: no ptxas to assemble the generated PTX");
  return ptxas_available();
}

/// Compiles NAME.cpp (warnings are errors) and links it into a tiny main
/// against the driver's stub library: it builds with the Driver API alone.
inline void check_launcher_builds(const TempDir &dir, const std::string &name, const std::string &call) {
  Result compiled = run("g++ -std=c++17 -O2 -Wall -Wextra -Werror -c " + name + ".cpp -I" +
                            quote(cuda_include()) + " -o " + name + ".o",
                        dir.path);
  INFO(compiled.err);
  REQUIRE(compiled.status == 0);
  if (!fs::exists(cuda_stubs() + "/libcuda.so")) {
    MESSAGE("skipped linking: no ", cuda_stubs(), "/libcuda.so");
    return;
  }
  write_file(dir / "link_main.cpp",
             "#include \"" + name + ".h\"\nint main() { return " + call + " == CUDA_SUCCESS; }\n");
  Result linked = run("g++ -std=c++17 link_main.cpp " + name + ".o -I" + quote(cuda_include()) +
                          " -L" + quote(cuda_stubs()) + " -lcuda -o link_main",
                      dir.path);
  INFO(linked.err);
  CHECK(linked.status == 0);
}

/// Compiles the stand-in driver runtime/aot/testing/DRIVER.cpp (warnings
/// are errors) with the launchers `launchers` (space-separated .cpp files
/// in `dir`) into `dir`/DRIVER, which the caller runs.
inline void build_fake_driver(const fs::path &dir, const std::string &driver, const std::string &launchers) {
  Result built = run("g++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread -I. -I" + quote(cuda_include()) + " " +
                         quote(kAotSources + "/testing/" + driver + ".cpp") + " " + launchers + " -o " + driver,
                     dir);
  INFO(built.err);
  REQUIRE(built.status == 0);
}

/// build_fake_driver, then runs `dir`/DRIVER: it exits 0 having printed
/// `passed`.
inline void check_fake_driver_passes(const fs::path &dir, const std::string &driver, const std::string &launchers,
                                     const std::string &passed) {
  build_fake_driver(dir, driver, launchers);
  Result checked = run("./" + driver, dir);
  INFO(checked.out);
  CHECK(checked.status == 0);
  CHECK(checked.out.find(passed) != std::string::npos);
}

} // namespace aot_testing
