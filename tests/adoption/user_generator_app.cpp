// The launcher of a user's own generator (silu_generator.cpp), built from
// the installed package: coalesce_add_generator() made the generator
// library, coalesce_add_aot_library(GENERATOR_LIBRARY ...) had the
// installed coalesce-aot load it and generate silu_residual_linear.h/.cpp
// at build time. Called against the stand-in driver of FakeDriver.h: the
// launcher must load its module, launch its kernel with the caller's
// buffers in the header's order, and reject a bad call naming the argument.

#include "silu_residual_linear.h"

#include "FakeDriver.h"

#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void check(bool ok, const char *what) {
  if (!ok) {
    std::printf("FAIL: %s (message: '%s')\n", what, silu_residual_linear_error_message());
    ++failures;
  }
}
#define CHECK(condition) check((condition), #condition)

const CUdeviceptr W = 1ull << 32, bias = 2ull << 32, residual = 3ull << 32, x = 4ull << 32, out = 5ull << 32;

} // namespace

int main() {
  fake::scalar_count = 0; // five buffers: the stand-in records the first four
  CHECK(silu_residual_linear(W, bias, residual, x, out, 300, 512, 1024, nullptr) == CUDA_SUCCESS);
  CHECK(fake::loads == 1 && fake::launches == 1);
  CHECK(fake::kernel_names.size() == 1 && fake::kernel_names[0] == "coalesce_silu_residual_linear");
  CHECK(fake::ptx.find(".entry") != std::string::npos);
  CHECK(fake::last.buffers[0] == W && fake::last.buffers[1] == bias && fake::last.buffers[3] == x);
  // The warpgroup MMA's kernel (sm_90a) reads x and W through the TMA.
  CHECK(fake::tensor_maps == 2);
  // A null pointer is refused before any launch, and named.
  CHECK(silu_residual_linear(W, bias, 0, x, out, 300, 512, 1024, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(std::strstr(silu_residual_linear_error_message(), "residual") != nullptr);
  CHECK(fake::launches == 1);
  std::printf("%s: the launcher of the user's generator ran against the stand-in driver\n", failures ? "FAIL" : "ok");
  return failures ? 1 : 0;
}
