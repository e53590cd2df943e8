// Checks a launcher whose inputs are views without a GPU, with the stand-in
// driver of FakeDriver.h. tests/test_aot_views.cpp compiles it with the
// launcher that
//   coalesce-aot --name=views --dtype=bf16 --out-dtype=bf16 --b=nk --views=both
// writes (A M x K, rows lda apart; W N x K, rows ldb apart), runs it, and
// expects exit status 0. What it checks is what views change in a
// launcher: the leading dimensions taken after the sizes and passed to the
// kernel; each view's reach, 1 + (rows - 1) * ld + (columns - 1) elements,
// in the overlap checks; strides of at least 1; tensor maps with the
// views' row strides, and none (the kernel's element copies) where a
// leading dimension is no whole 16 bytes.

#include "views.h"

#include "LauncherChecks.h"

using namespace launcher_checks;

namespace {

/// Whether tensor-map call `n` encoded `address` as bf16 rows x columns,
/// rows `lead` elements apart, in 128-byte swizzled boxes of 64 columns.
bool map_is(size_t n, CUdeviceptr address, cuuint64_t rows, cuuint64_t columns, cuuint64_t lead) {
  if (n >= fake::tensor_map_calls.size())
    return false;
  const fake::TensorMapCall &call = fake::tensor_map_calls[n];
  return call.type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && call.rank == 2 && call.address == address &&
         call.dims[0] == columns && call.dims[1] == rows && call.strides[0] == 2 * lead && call.box[0] == 64 &&
         call.swizzle == CU_TENSOR_MAP_SWIZZLE_128B;
}

} // namespace

int main() {
  error_message = views_error_message;
  fake::buffer_count = 4; // A, B, bias, out
  fake::scalar_count = 5; // K, M, N, lda, ldb: sorted by name
  fake::map_count = 2;    // A's, B's
  const int M = 200, N = 256, K = 256, lda = 320, ldb = 264;

  // A reaches 1 + (M - 1) * lda + (K - 1) elements: out may start there,
  // not before (a dense A would end at M * K, sooner).
  const CUdeviceptr a_end = A + 2ull * ((M - 1) * lda + K);
  CHECK(views(A, B, bias, a_end - 2, M, N, K, lda, ldb, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input A"));
  CHECK(views(A, B, bias, out, M, N, K, 0, ldb, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("A's stride lda is 0; strides are at least 1"));
  // 32768 rows 65536 apart reach past 2^30 elements.
  CHECK(views(A, B, bias, out, 32768, N, K, 65536, ldb, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("A, a view, would reach 2147418368 elements"));
  CHECK(fake::launches == 0);

  CHECK(views(A, B, bias, a_end, M, N, K, lda, ldb, stream) == CUDA_SUCCESS);
  CHECK(views_error_message()[0] == '\0');
  CHECK(fake::launches == 1);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N &&
        fake::last.scalars[3] == lda && fake::last.scalars[4] == ldb);
  CHECK(fake::tensor_map_calls.size() == 2);
  CHECK(map_is(0, A, M, K, lda) && map_is(1, B, N, K, ldb));
  CHECK(fake::last.maps[0] == 1 && fake::last.maps[1] == 2);
  // Another leading dimension is another map.
  CHECK(views(A, B, bias, out, M, N, K, lda + 8, ldb, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 3);
  CHECK(map_is(2, A, M, K, lda + 8));
  // Rows 4 elements off a 16-byte multiple: no map for A (the kernel takes
  // its element copies), B's as before.
  CHECK(views(A, B, bias, out, M, N, K, lda + 4, ldb, stream) == CUDA_SUCCESS);
  CHECK(fake::tensor_map_calls.size() == 3);
  CHECK(fake::last.maps[0] == 0 && fake::last.maps[1] == 2);
  return result("views launcher checks passed");
}
