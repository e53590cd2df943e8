// Checks a generated launcher without a GPU: with the stand-in driver of
// FakeDriver.h (which records what the launcher asks for), it calls the
// launcher with good and bad arguments. tests/test_aot.cpp compiles it with the launcher that
//   coalesce-aot --name=gemm_check --bias=true --activation=relu --K=96
// writes, runs it, and expects exit status 0. Each failed check prints a line.

#include "gemm_check.h"

#include "LauncherChecks.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace launcher_checks;

int main() {
  error_message = gemm_check_error_message;
  // Bad arguments fail before the driver is touched.
  CHECK(gemm_check(0, B, bias, out, 100, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("A is a null pointer"));
  CHECK(gemm_check(A, B, bias, 0, 100, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("out is a null pointer"));
  CHECK(gemm_check(A, B, bias, out, -1, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("M = -1"));
  CHECK(gemm_check(A, B, bias, out, 100, -5, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("N = -5"));
  CHECK(gemm_check(A, B, bias, out, 100, 200, 95, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("generated for K = 96"));
  CHECK(gemm_check(A, B, bias, out, 1 << 30, 1 << 20, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("32-bit"));
  CHECK(gemm_check(A, B, bias, out, (1 << 30) + 1, 1, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("2^30"));
  // The output may not share memory with an input: the same pointer, or a
  // range that starts inside the input's (A is 100 x 96 floats).
  CHECK(gemm_check(A, B, bias, A, 100, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input A"));
  CHECK(gemm_check(A, B, bias, A + 100 * 96 * 4 - 4, 100, 200, 96, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("overlaps the input A"));
  CHECK(fake::loads == 0 && fake::launches == 0);

  // No current context.
  fake::current = nullptr;
  CHECK(gemm_check(A, B, bias, out, 100, 200, 96, stream) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(message_has("no CUDA context"));
  fake::current = reinterpret_cast<CUcontext>(uintptr_t(0x100));

  // A failed load reports the JIT log, and the next call tries again.
  fake::load_result = CUDA_ERROR_INVALID_PTX;
  CHECK(gemm_check(A, B, bias, out, 100, 200, 96, stream) == CUDA_ERROR_INVALID_PTX);
  CHECK(message_has("the fake JIT log") && message_has("sm_90a"));
  CHECK(fake::loads == 1 && fake::launches == 0);
  fake::load_result = CUDA_SUCCESS;

  // Many threads launching at once, the first time: one load, every launch made.
  std::vector<std::thread> threads;
  std::atomic<int> successes{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < 100; ++r)
        if (gemm_check(A, B, bias, out, 64, 64, 96, stream) == CUDA_SUCCESS)
          ++successes;
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(successes == 800 && fake::launches == 800 && fake::loads == 2);

  // A good launch: grid from the sizes, the block of the schedule, the
  // parameters in the kernel's order (buffers, then the run-time sizes M, N
  // sorted by name; K is a constant), on the caller's stream.
  CHECK(gemm_check(A, B, bias, out, 100, 200, 96, stream) == CUDA_SUCCESS);
  CHECK(gemm_check_error_message()[0] == '\0');
  CHECK(fake::loads == 2 && fake::launches == 801);
  CHECK(fake::ptx.find(".target sm_90a") != std::string::npos);
  CHECK(fake::ptx.find(".entry coalesce_gemm_check(") != std::string::npos);
  CHECK(fake::kernel_names.size() == 1 && fake::kernel_names[0] == "coalesce_gemm_check"); // named after the launcher
  CHECK(fake::last.kernel == reinterpret_cast<CUfunction>(fake::kKernel));
  CHECK(fake::last.grid[0] == 4 && fake::last.grid[1] == 2 && fake::last.grid[2] == 1);
  CHECK(fake::last.block[0] == 16 && fake::last.block[1] == 16 && fake::last.block[2] == 1);
  CHECK(fake::last.shared == 0 && fake::last.stream == stream);
  CHECK(fake::last.buffers[0] == A && fake::last.buffers[1] == B);
  CHECK(fake::last.buffers[2] == bias && fake::last.buffers[3] == out);
  CHECK(fake::last.scalars[0] == 100 && fake::last.scalars[1] == 200);

  // Ragged sizes round the grid up; the module is not loaded again.
  CHECK(gemm_check(A, B, bias, out, 129, 1, 96, stream) == CUDA_SUCCESS);
  CHECK(fake::last.grid[0] == 1 && fake::last.grid[1] == 3);
  CHECK(fake::loads == 2 && fake::launches == 802);

  CHECK(gemm_check_load() == CUDA_SUCCESS && fake::loads == 2);

  return result("launcher checks passed");
}
