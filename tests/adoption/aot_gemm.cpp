// Launchers made at build time by coalesce_add_aot_library() (gemm_relu:
// out = relu(A B + bias), K fixed at 96, M and N at run time; and
// gemm_gelu_cubin, with GELU and the cubin embedded), called as an
// application calls them. Without a GPU, against the stand-in driver of
// FakeDriver.h: a launcher must load its module, launch its kernel over
// the right grid with the caller's buffers and sizes, and reject a bad call
// with a message naming the argument. Exits non-zero on a failed check.

#include "gemm_gelu_cubin.h"
#include "gemm_relu.h"

#include "FakeDriver.h"

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void check(bool ok, const char *what) {
  if (!ok) {
    std::printf("FAIL: %s (message: '%s')\n", what, gemm_relu_error_message());
    ++failures;
  }
}
#define CHECK(condition) check((condition), #condition)

const CUdeviceptr A = 1ull << 32, B = 2ull << 32, bias = 3ull << 32, out = 4ull << 32;

} // namespace

int main() {
  CHECK(gemm_relu(A, B, bias, out, 1000, 700, 96, nullptr) == CUDA_SUCCESS);
  CHECK(fake::loads == 1 && fake::launches == 1);
  CHECK(fake::kernel_names.size() == 1);
  CHECK(fake::ptx.find(".entry") != std::string::npos);
  CHECK(fake::last.buffers[0] == A && fake::last.buffers[3] == out);
  CHECK(fake::last.grid[0] >= 1 && fake::last.grid[1] >= 1 && fake::last.block[0] * fake::last.block[1] >= 32);
  // K is fixed at generation: another K is refused before any launch.
  CHECK(gemm_relu(A, B, bias, out, 1000, 700, 95, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(std::strstr(gemm_relu_error_message(), "K") != nullptr);
  CHECK(fake::launches == 1);
  // The second launcher, in the same program: its own module, from the cubin.
  CHECK(gemm_gelu_cubin(A, B, bias, out, 1000, 700, 96, nullptr) == CUDA_SUCCESS);
  CHECK(fake::loads == 2 && fake::cubin_loads == 1 && fake::loaded_from == "cubin");
  CHECK(fake::kernel_names.size() == 2 && fake::kernel_names[0] == "coalesce_gemm_relu" &&
        fake::kernel_names[1] == "coalesce_gemm_gelu_cubin");
  std::printf("%s: the launcher from coalesce_add_aot_library ran against the stand-in driver\n",
              failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
