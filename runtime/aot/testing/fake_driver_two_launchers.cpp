// Two launchers in one program, against the stand-in driver of FakeDriver.h:
// they link together (their helpers are private to each), each loads its own
// module and launches its own kernel, named after it. tests/test_aot.cpp
// compiles it with the launchers that
//   coalesce-aot --name=gemm_relu_one --bias=true --activation=relu --K=96
//   coalesce-aot --name=gemm_gelu_two --bias=true --activation=gelu --K=96
// write, and expects exit status 0. Each failed check prints a line.

#include "gemm_gelu_two.h"
#include "gemm_relu_one.h"

#include "LauncherChecks.h"

#include <cstdio>
#include <string>

using namespace launcher_checks;

int main() {
  CHECK(gemm_relu_one(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
  CHECK(fake::ptx.find(".entry coalesce_gemm_relu_one(") != std::string::npos);
  CHECK(gemm_gelu_two(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
  CHECK(fake::ptx.find(".entry coalesce_gemm_gelu_two(") != std::string::npos);
  CHECK(gemm_relu_one(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
  // One module each, loaded once; each launcher's kernel by its own name.
  CHECK(fake::loads == 2 && fake::launches == 3);
  CHECK(fake::kernel_names.size() == 2);
  CHECK(fake::kernel_names.size() == 2 && fake::kernel_names[0] == "coalesce_gemm_relu_one" &&
        fake::kernel_names[1] == "coalesce_gemm_gelu_two");
  return result("launcher checks passed");
}
