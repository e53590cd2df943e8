// Checks a batched GEMM's launcher without a GPU, with the stand-in driver
// of FakeDriver.h. tests/test_aot_batched.cpp compiles it with the launcher
// that
//   coalesce-aot --name=batched --dtype=bf16 --out-dtype=bf16 --batched=a --b=nk
// writes (A batch x M x K, one W N x K for the whole batch, out batch x M x
// N), runs it, and expects exit status 0. What it checks is what a batch
// changes in a launcher: the batch count taken after M, N and K and passed
// to the kernel; the buffers' sizes counted with it (the overlap checks);
// the grid's z; A's tensor map of rank 3 (a box of one product's rows),
// W's of rank 2.

#include "batched.h"

#include "LauncherChecks.h"

#include <vector>

using namespace launcher_checks;

namespace {

/// Whether tensor-map call `n` (0-based) encoded `address` as bf16 data
/// with `rank` dimensions of `dims` (innermost first), dense, in 128-byte
/// swizzled boxes of `box_rows` rows of 64 elements (and 1 of a batch).
bool map_is(size_t n, CUdeviceptr address, cuuint32_t rank, std::vector<cuuint64_t> dims, cuuint32_t box_rows) {
  if (n >= fake::tensor_map_calls.size())
    return false;
  const fake::TensorMapCall &call = fake::tensor_map_calls[n];
  bool ok = call.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && call.rank == rank && call.address == address &&
            dims.size() == rank && call.box[0] == 64 && call.box[1] == box_rows &&
            call.swizzle == CU_TENSOR_MAP_SWIZZLE_128B;
  cuuint64_t stride = 2;
  for (cuuint32_t d = 0; ok && d < rank; ++d) {
    ok = call.dims[d] == dims[d] && call.element_strides[d] == 1 && (d < 2 || call.box[d] == 1) &&
         (d == 0 || call.strides[d - 1] == stride);
    stride *= dims[d];
  }
  return ok;
}

} // namespace

int main() {
  error_message = batched_error_message;
  fake::buffer_count = 4; // A, B, bias, out
  fake::scalar_count = 4; // K, M, N, batch: sorted by name
  fake::map_count = 2;    // A's, B's
  const int M = 200, N = 256, K = 256, batch = 3;

  // out holds batch * M * N elements: it may start right after A's batch *
  // M * K, not before.
  CHECK(batched(A, B, bias, A + 2ull * batch * M * K - 16, M, N, K, batch, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input A"));
  CHECK(fake::launches == 0);
  CHECK(batched(A, B, bias, A + 2ull * batch * M * K, M, N, K, batch, stream) == CUDA_SUCCESS);
  CHECK(batched(A, B, bias, out, M, N, K, batch, stream) == CUDA_SUCCESS);
  CHECK(batched_error_message()[0] == '\0');
  CHECK(fake::launches == 2);
  CHECK(fake::last.buffers[0] == A && fake::last.buffers[1] == B && fake::last.buffers[2] == bias &&
        fake::last.buffers[3] == out);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N &&
        fake::last.scalars[3] == batch);
  // One block per 128 x 256 tile of each product: z is the batch.
  CHECK(fake::last.grid[0] == 1 && fake::last.grid[1] == 2 && fake::last.grid[2] == unsigned(batch));
  // The second call reuses the maps of the first.
  CHECK(fake::tensor_map_calls.size() == 2);
  CHECK(map_is(0, A, 3, {K, M, batch}, 128));
  CHECK(map_is(1, B, 2, {K, N}, 256));
  CHECK(fake::last.maps[0] == 1 && fake::last.maps[1] == 2);
  // Another batch count is another tensor map of A, not of W.
  CHECK(batched(A, B, bias, out, M, N, K, batch + 1, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 3);
  CHECK(map_is(2, A, 3, {K, M, batch + 1}, 128));
  CHECK(fake::last.grid[2] == unsigned(batch + 1));
  // An empty batch launches nothing.
  CHECK(batched(A, B, bias, out, M, N, K, 0, stream) == CUDA_SUCCESS);
  CHECK(fake::launches == 3);
  return result("batched launcher checks passed");
}
