// Checks a generated launcher's zero sizes without a GPU, with the stand-in
// driver of FakeDriver.h. tests/test_aot.cpp compiles it with the launcher
// that
//   coalesce-aot --name=gemm_check --bias=true --activation=relu --tile-m=64
//                --tile-n=64 --reg-m=4 --reg-n=4
// writes (M, N and K at run time), runs it, and expects exit status 0.
// K = 0 computes out = epilogue(bias), as cuBLAS does, with empty A and B
// (which may be null); M = 0 or N = 0 is an empty output: nothing launched.

#include "gemm_check.h"

#include "LauncherChecks.h"

using namespace launcher_checks;

int main() {
  error_message = gemm_check_error_message;
  fake::scalar_count = 3; // K, M, N: the program's scalars, sorted by name

  // K = 0: one launch over the whole output; A and B are empty, null or not.
  CHECK(gemm_check(0, 0, bias, out, 100, 200, 0, stream) == CUDA_SUCCESS);
  CHECK(gemm_check_error_message()[0] == '\0');
  CHECK(fake::launches == 1);
  CHECK(fake::last.grid[0] == 4 && fake::last.grid[1] == 2 && fake::last.grid[2] == 1);
  CHECK(fake::last.scalars[0] == 0 && fake::last.scalars[1] == 100 && fake::last.scalars[2] == 200);
  CHECK(gemm_check(A, B, bias, out, 100, 200, 0, stream) == CUDA_SUCCESS);
  CHECK(fake::launches == 2 && fake::last.buffers[0] == A && fake::last.buffers[3] == out);

  // An empty output: nothing to launch, and every buffer may be null.
  CHECK(gemm_check(A, B, bias, out, 0, 200, 96, stream) == CUDA_SUCCESS);
  CHECK(gemm_check(0, B, bias, 0, 0, 200, 96, stream) == CUDA_SUCCESS);
  CHECK(gemm_check(0, 0, 0, 0, 100, 0, 0, stream) == CUDA_SUCCESS);
  CHECK(fake::launches == 2);

  // What stays wrong: a negative size, a null buffer that is not empty, the
  // output (or the bias it reads) null when the output is not empty.
  CHECK(gemm_check(A, B, bias, out, 100, 200, -1, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("K = -1") && message_has("must not be negative"));
  CHECK(gemm_check(0, B, bias, out, 100, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("A is a null pointer"));
  CHECK(gemm_check(A, B, bias, 0, 100, 200, 0, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("out is a null pointer"));
  CHECK(gemm_check(A, B, 0, out, 100, 200, 0, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("bias is a null pointer"));
  CHECK(fake::launches == 2);

  return result("launcher size checks passed");
}
