// Checks a launcher whose output is a view without a GPU, with the
// stand-in driver of FakeDriver.h. tests/test_aot_views.cpp compiles it
// with the launcher that
//   coalesce-aot --name=output_view --dtype=bf16 --out-dtype=bf16 --b=nk --output-view
// writes (out M x N, rows ldc apart), runs it, and expects exit status 0.
// What it checks: ldc taken after the sizes and passed to the kernel; out's
// reach, 1 + (M - 1) * ldc + (N - 1) elements, in the overlap checks; a
// stride of at least 1; rows that do not overlap (ldc >= N where M > 1).

#include "output_view.h"

#include "LauncherChecks.h"

using namespace launcher_checks;

int main() {
  error_message = output_view_error_message;
  fake::buffer_count = 4; // A, B, bias, out
  fake::scalar_count = 4; // K, M, N, ldc: sorted by name
  fake::map_count = 2;    // A's, B's
  const int M = 200, N = 256, K = 256, ldc = 320;

  // out reaches 1 + (M - 1) * ldc + (N - 1) elements: an input may start
  // there, not before (a dense out would end at M * N, sooner).
  const CUdeviceptr out_end = out + 2ull * ((M - 1) * ldc + N);
  CHECK(output_view(A, out_end - 2, bias, out, M, N, K, ldc, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("overlaps"));
  CHECK(output_view(A, B, bias, out, M, N, K, 0, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("out's stride ldc is 0; strides are at least 1"));
  // Rows closer than N elements overlap: refused, whatever the buffers.
  CHECK(output_view(A, B, bias, out, M, N, K, N - 1, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("out is a view whose elements overlap (a stride of 255 steps less than the 256 elements"));
  CHECK(fake::launches == 0);

  CHECK(output_view(A, out_end, bias, out, M, N, K, ldc, stream) == CUDA_SUCCESS);
  CHECK(output_view_error_message()[0] == '\0');
  CHECK(fake::launches == 1);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N &&
        fake::last.scalars[3] == ldc);
  // One row overlaps nothing, whatever ldc is; nor does an empty view.
  CHECK(output_view(A, B, bias, out, 1, N, K, 1, stream) == CUDA_SUCCESS);
  CHECK(output_view(A, B, bias, out, 0, N, K, 1, stream) == CUDA_SUCCESS);
  CHECK(output_view_error_message()[0] == '\0');
  return result("output view launcher checks passed");
}
