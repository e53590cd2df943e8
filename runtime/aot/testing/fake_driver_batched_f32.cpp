// Checks the launcher of a batch on f32's FFMA schedule without a GPU, with
// the stand-in driver of FakeDriver.h. tests/test_aot_batched.cpp compiles
// it with the launcher that
//   coalesce-aot --name=batched32 --batched=a --b=nk
// writes (A batch x M x K, one W N x K for the whole batch, out batch x M x
// N, all f32), runs it, and expects exit status 0. The FFMA kernel reads its
// operands through plain loads, so no tensor map: what a batch changes is
// the count taken after M, N and K and passed to the kernel, the buffers'
// sizes counted with it (the overlap checks), and the grid's z.

#include "batched32.h"

#include "LauncherChecks.h"

using namespace launcher_checks;

int main() {
  error_message = batched32_error_message;
  fake::buffer_count = 4; // A, B, bias, out
  fake::scalar_count = 4; // K, M, N, batch: sorted by name
  fake::map_count = 0;
  const int M = 200, N = 256, K = 64, batch = 3;

  // out holds batch * M * N f32 elements: it may start right after A's
  // batch * M * K, not before.
  CHECK(batched32(A, B, bias, A + 4ull * batch * M * K - 16, M, N, K, batch, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK(message_has("the output out overlaps the input A"));
  CHECK(fake::launches == 0);
  CHECK(batched32(A, B, bias, A + 4ull * batch * M * K, M, N, K, batch, stream) == CUDA_SUCCESS);
  CHECK(batched32(A, B, bias, out, M, N, K, batch, stream) == CUDA_SUCCESS);
  CHECK(batched32_error_message()[0] == '\0');
  CHECK(fake::launches == 2);
  CHECK(fake::last.buffers[0] == A && fake::last.buffers[1] == B && fake::last.buffers[2] == bias &&
        fake::last.buffers[3] == out);
  CHECK(fake::last.scalars[0] == K && fake::last.scalars[1] == M && fake::last.scalars[2] == N &&
        fake::last.scalars[3] == batch);
  // z is the batch; x and y the tiles of one product.
  CHECK(fake::last.grid[2] == unsigned(batch));
  const unsigned one_product[2] = {fake::last.grid[0], fake::last.grid[1]};
  CHECK(one_product[0] > 0 && one_product[1] > 0);
  CHECK(fake::tensor_map_calls.empty());
  CHECK(batched32(A, B, bias, out, M, N, K, batch + 1, stream) == CUDA_SUCCESS);
  CHECK(fake::last.grid[2] == unsigned(batch + 1));
  CHECK(fake::last.grid[0] == one_product[0] && fake::last.grid[1] == one_product[1]);
  // An empty batch launches nothing.
  CHECK(batched32(A, B, bias, out, M, N, K, 0, stream) == CUDA_SUCCESS);
  CHECK(fake::launches == 3);
  return result("f32 batched launcher checks passed");
}
