// Checks the module loading of a launcher generated with --cubin, against
// the stand-in driver of FakeDriver.h. tests/test_aot.cpp compiles it with
// the launcher that
//   coalesce-aot --name=gemm_cubin --bias=true --activation=relu --K=96 --cubin
// writes, and runs it twice, expecting exit status 0:
//   fake_driver_cubin          a driver that takes the cubin
//   fake_driver_cubin refuse   a driver that refuses it (another GPU): the PTX
// Each failed check prints a line.

#include "gemm_cubin.h"

#include "LauncherChecks.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace launcher_checks;

int main(int argc, char **argv) {
  error_message = gemm_cubin_error_message;
  bool refuse = argc > 1 && std::strcmp(argv[1], "refuse") == 0;
  if (refuse) {
    // The cubin is refused: the launcher loads the PTX instead, and runs.
    fake::refuse_cubin = true;
    CHECK(gemm_cubin(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
    CHECK(fake::loads == 2 && fake::cubin_loads == 1);
    CHECK(fake::loaded_from == "ptx");
    CHECK(fake::ptx.find(".entry coalesce_gemm_cubin(") != std::string::npos);
  } else {
    // Every load failing: the cubin first, then the PTX; the message says both.
    fake::load_result = CUDA_ERROR_INVALID_IMAGE;
    CHECK(gemm_cubin(A, B, bias, out, 100, 200, 96, stream) == CUDA_ERROR_INVALID_IMAGE);
    CHECK(std::strstr(gemm_cubin_error_message(), "cannot load the PTX (built for sm_90a) after the driver refused "
                                                  "the cubin"));
    CHECK(fake::loads == 2 && fake::cubin_loads == 1);
    // A driver that takes it: the cubin alone is loaded.
    fake::load_result = CUDA_SUCCESS;
    CHECK(gemm_cubin(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
    CHECK(fake::loads == 3 && fake::cubin_loads == 2);
    CHECK(fake::loaded_from == "cubin" && fake::ptx.empty());
  }
  CHECK(fake::kernel_names.size() == 1 && fake::kernel_names[0] == "coalesce_gemm_cubin");
  CHECK(fake::launches == 1);
  return result("launcher checks passed");
}
