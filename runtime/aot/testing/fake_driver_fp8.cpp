// Checks two FP8 launchers without a GPU, with the stand-in driver of
// FakeDriver.h. tests/test_aot_fp8.cpp compiles it with the launchers that
//   coalesce-aot --name=gemm_fp8 --dtype=e4m3 --b=nk --scales=row --out-dtype=bf16
//   coalesce-aot --name=gemm_fp8_tensor --dtype=e5m2 --b=nk --scales=tensor
//                --bias=false --activation=relu --out-dtype=f32 --K=256
// write, runs it, and expects exit status 0. What it checks is what FP8
// changes in a launcher: buffers of one byte per element (sizes and overlaps
// in bytes), the f32 scales checked like the bias, and the TMA's tensor maps
// of 8-bit data (UINT8, rows of K bytes, 128-element boxes along K).

#include "gemm_fp8.h"
#include "gemm_fp8_tensor.h"

#include "LauncherChecks.h"

#include <string>

using namespace launcher_checks;

namespace {

const CUdeviceptr scale_a = 5ull << 32, scale_b = 6ull << 32;

/// Whether tensor-map call `n` (0-based) encoded `address` as 8-bit data of
/// `rows` rows of `columns` bytes, in 128-byte swizzled boxes of `box_rows`
/// rows of 128 elements.
bool map_is(size_t n, CUdeviceptr address, cuuint64_t rows, cuuint64_t columns, cuuint32_t box_rows) {
  if (n >= fake::tensor_map_calls.size())
    return false;
  const fake::TensorMapCall &call = fake::tensor_map_calls[n];
  return call.type == CU_TENSOR_MAP_DATA_TYPE_UINT8 && call.rank == 2 && call.address == address &&
         call.dims[0] == columns && call.dims[1] == rows && call.strides[0] == columns && call.box[0] == 128 &&
         call.box[1] == box_rows && call.element_strides[0] == 1 && call.element_strides[1] == 1 &&
         call.swizzle == CU_TENSOR_MAP_SWIZZLE_128B;
}

void check_row_scales() {
  error_message = gemm_fp8_error_message;
  fake::buffer_count = 6; // A, B, bias, scale_a, scale_b, out
  fake::scalar_count = 3; // K, M, N: sorted by name
  fake::map_count = 2;    // A's, then B's
  const int M = 200, N = 300, K = 256;

  // The scales are device buffers like the bias: null only where empty.
  CHECK(gemm_fp8(A, B, bias, 0, scale_b, out, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("scale_a is a null pointer"));
  CHECK(gemm_fp8(A, B, bias, scale_a, 0, out, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("scale_b is a null pointer"));
  // M = 0 empties A, scale_a and the output: they may be null, and nothing
  // is launched (at another N, so that B's map is encoded again below).
  CHECK(gemm_fp8(0, B, bias, 0, scale_b, 0, 0, 64, K, stream) == CUDA_SUCCESS);
  // One byte per element of A and B: the output may start right after
  // A's M * K bytes (2-byte elements would overlap there), not one row
  // before; the f32 scales take 4 bytes per element.
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, A + M * K - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input A"));
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, B + N * K - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input B"));
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, scale_a + 4 * M - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input scale_a"));
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, scale_b + 4 * N - 16, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input scale_b"));
  CHECK(fake::launches == 0);

  // The TMA reads A and B from 16-byte aligned addresses; the output's tiles
  // are stored in 16-byte vectors.
  CHECK(gemm_fp8(A + 8, B, bias, scale_a, scale_b, out, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("A is not 16-byte aligned; the kernel copies it with the TMA"));
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, out + 2, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("out is not 16-byte aligned"));
  CHECK(fake::launches == 0);
  fake::tensor_map_calls.clear();

  // A good launch: the FP8 kernel, its maps of 8-bit rows of K bytes (A in
  // 128 x 128 boxes, B in 256 x 128), passed after the sizes.
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, A + M * K, M, N, K, stream) == CUDA_SUCCESS);
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, out, M, N, K, stream) == CUDA_SUCCESS);
  CHECK(gemm_fp8_error_message()[0] == '\0');
  CHECK(fake::ptx.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3") != std::string::npos);
  CHECK(fake::kernel_names.size() == 1 && fake::kernel_names[0] == "coalesce_gemm_fp8");
  CHECK(fake::launches == 2);
  CHECK(fake::tensor_map_calls.size() == 2); // the second call reuses the maps of the first
  CHECK(map_is(0, A, M, K, 128));
  CHECK(map_is(1, B, N, K, 256));
  CHECK(fake::last.grid[0] == 2 && fake::last.grid[1] == 2 && fake::last.grid[2] == 1);
  CHECK(fake::last.block[0] * fake::last.block[1] * fake::last.block[2] == 256); // two warpgroups
  CHECK(fake::last.shared > 48 * 1024);
  CHECK(fake::last.buffers[0] == A && fake::last.buffers[1] == B && fake::last.buffers[2] == bias);
  CHECK(fake::last.buffers[3] == scale_a && fake::last.buffers[4] == scale_b && fake::last.buffers[5] == out);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N);
  CHECK(fake::last.maps[0] == 1 && fake::last.maps[1] == 2);

  // Another K: both maps encoded again, rows of 512 bytes.
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, out, M, N, 512, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 4 && map_is(2, A, M, 512, 128) && map_is(3, B, N, 512, 256));
  CHECK(fake::last.maps[0] == 3 && fake::last.maps[1] == 4);
  // Rows of 100 bytes are no 16-byte multiple: no maps (the kernel takes its
  // in-kernel cp.async copies), and a zeroed map is passed.
  CHECK(gemm_fp8(A, B, bias, scale_a, scale_b, out, M, N, 100, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 4);
  CHECK(fake::last.maps[0] == 0 && fake::last.maps[1] == 0 && fake::last.scalars[0] == 100);
}

void check_tensor_scales() {
  error_message = gemm_fp8_tensor_error_message;
  fake::buffer_count = 5; // A, B, scale_a, scale_b, out
  fake::scalar_count = 2; // M, N; K is fixed at 256
  fake::map_count = 2;
  const int M = 64, N = 512, K = 256;
  const int launches = fake::launches;
  fake::tensor_map_calls.clear();

  // One f32 per scale: 4 bytes, so an output 4 bytes on does not overlap.
  CHECK(gemm_fp8_tensor(A, B, 0, scale_b, out, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("scale_a is a null pointer"));
  CHECK(gemm_fp8_tensor(A, B, scale_a, scale_b, scale_b, M, N, K, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input scale_b"));
  CHECK(gemm_fp8_tensor(A, B, scale_a, scale_b, out, M, N, 128, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("generated for K = 256"));
  CHECK(fake::launches == launches);

  CHECK(gemm_fp8_tensor(A, B, scale_a, scale_b, scale_a + 4, M, N, K, stream) == CUDA_SUCCESS);
  CHECK(fake::ptx.find("wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2") != std::string::npos);
  CHECK(fake::launches == launches + 1);
  CHECK(fake::tensor_map_calls.size() == 2 && map_is(0, A, M, K, 128) && map_is(1, B, N, K, 256));
  CHECK(fake::last.buffers[2] == scale_a && fake::last.buffers[3] == scale_b && fake::last.buffers[4] == scale_a + 4);
  CHECK(fake::last.scalars[0] == M && fake::last.scalars[1] == N);
  CHECK(fake::last.maps[0] == 1 && fake::last.maps[1] == 2);
}

} // namespace

int main() {
  check_row_scales();
  check_tensor_scales();
  return result("FP8 launcher checks passed");
}
