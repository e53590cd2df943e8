// Checks a SwiGLU launcher without a GPU, with the stand-in driver of
// FakeDriver.h. tests/test_aot_swiglu.cpp compiles it with the launcher that
//   coalesce-aot --name=swiglu --epilogue=swiglu --dtype=bf16 --out-dtype=bf16
// writes, runs it, and expects exit status 0. What it checks is what the
// SwiGLU changes in a launcher: three inputs taken as the formula reads them
// (x, Wg, Wu), each reaching the kernel parameter of its name (the kernel
// takes them in the pipeline's order, Wg, Wu, x), the output checked
// against all three, and one tensor map per input.

#include "swiglu.h"

#include "LauncherChecks.h"

using namespace launcher_checks;

namespace {

const CUdeviceptr x = 1ull << 32, Wg = 2ull << 32, Wu = 3ull << 32, y = 4ull << 32;

/// Whether tensor-map call `n` (0-based) encoded `address` as bf16 data of
/// `rows` rows of `columns` elements, in 128-byte swizzled boxes of 128
/// rows of 64 elements.
bool map_is(size_t n, CUdeviceptr address, cuuint64_t rows, cuuint64_t columns) {
  if (n >= fake::tensor_map_calls.size())
    return false;
  const fake::TensorMapCall &call = fake::tensor_map_calls[n];
  return call.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && call.rank == 2 && call.address == address &&
         call.dims[0] == columns && call.dims[1] == rows && call.strides[0] == 2 * columns && call.box[0] == 64 &&
         call.box[1] == 128 && call.swizzle == CU_TENSOR_MAP_SWIZZLE_128B;
}

} // namespace

int main() {
  error_message = swiglu_error_message;
  fake::buffer_count = 4; // the kernel's order: Wg, Wu, x, y
  fake::scalar_count = 3; // K, M, N: sorted by name
  fake::map_count = 3;    // x's, Wg's, Wu's
  const int M = 200, N = 300, K = 256;

  CHECK(swiglu(x, Wg, 0, y, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("Wu is a null pointer"));
  // 2-byte elements: y may start right after x's M * K, not before.
  CHECK(swiglu(x, Wg, Wu, x + 2 * M * K - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output y overlaps the input x"));
  CHECK(swiglu(x, Wg, Wu, Wg + 2 * N * K - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output y overlaps the input Wg"));
  CHECK(swiglu(x, Wg, Wu, Wu + 2 * N * K - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output y overlaps the input Wu"));
  CHECK(swiglu(x, Wg + 8, Wu, y, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("Wg is not 16-byte aligned; the kernel copies it with the TMA"));
  CHECK(fake::launches == 0);
  // M = 0 empties x and y: they may be null, and nothing is launched (at
  // another N, so that the maps of Wg and Wu are encoded again below).
  CHECK(swiglu(0, Wg, Wu, 0, 0, 64, K, stream) == CUDA_SUCCESS);
  CHECK(fake::launches == 0);
  fake::tensor_map_calls.clear();

  CHECK(swiglu(x, Wg, Wu, x + 2 * M * K, M, N, K, stream) == CUDA_SUCCESS);
  CHECK(swiglu(x, Wg, Wu, y, M, N, K, stream) == CUDA_SUCCESS);
  CHECK(swiglu_error_message()[0] == '\0');
  CHECK(fake::ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != std::string::npos);
  CHECK(fake::kernel_names.size() == 1 && fake::kernel_names[0] == "coalesce_swiglu");
  CHECK(fake::launches == 2);
  // Each pointer reaches the kernel parameter of its name.
  CHECK(fake::last.buffers[0] == Wg && fake::last.buffers[1] == Wu && fake::last.buffers[2] == x);
  CHECK(fake::last.buffers[3] == y);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N);
  CHECK(fake::tensor_map_calls.size() == 3); // the second call reuses the maps of the first
  CHECK(map_is(0, x, M, K) && map_is(1, Wg, N, K) && map_is(2, Wu, N, K));
  CHECK(fake::last.maps[0] == 1 && fake::last.maps[1] == 2 && fake::last.maps[2] == 3);
  // 128 x 128 tiles of two warpgroups.
  CHECK(fake::last.grid[0] == 3 && fake::last.grid[1] == 2 && fake::last.grid[2] == 1);
  CHECK(fake::last.block[0] * fake::last.block[1] * fake::last.block[2] == 256);
  // Four stages of x's, Wg's and Wu's 16 KiB tiles and their barriers; the
  // output tile takes the slots' bytes after the main loop.
  CHECK(fake::last.shared == 4 * 3 * 16384 + 1024);

  // Rows of K = 100 bf16 elements are no 16-byte multiple: no maps (the
  // kernel takes its in-kernel cp.async copies), and zeroed maps are passed.
  CHECK(swiglu(x, Wg, Wu, y, M, N, 100, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 3);
  CHECK(fake::last.maps[0] == 0 && fake::last.maps[1] == 0 && fake::last.maps[2] == 0);
  CHECK(fake::last.scalars[0] == 100);
  return result("SwiGLU launcher checks passed");
}
