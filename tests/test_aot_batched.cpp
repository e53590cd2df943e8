// coalesce-aot's batch of products (--batched=both|a|b, --batch): the flags
// it refuses, by name and before anything is written; the refusal for a GPU
// until the GPU check has run a batch there; the launcher's signature and
// documentation (the batch count after M, N and K, the buffers'
// dimensions, the grid's z), and what it does with the stand-in driver
// (runtime/aot/testing/fake_driver_batched.cpp: sizes, grid, tensor maps of
// rank 3). The kernels' numbers are tests/test_batched_mma.cpp's, on the
// same algorithm (examples/BatchedGemm.h).

#include "AotTool.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace aot_testing;

namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("the flags a batch cannot take are refused by name") {
  struct Bad {
    const char *args, *message;
  };
  const Bad cases[] = {
      {"--batch=4", "--batch=4 is the count of a batch of products: give --batched=both, a or b"},
      {"--dtype=bf16 --batched=a --split-k=2", "--batched=a with --split-k=2: a batch's products are not split"},
      {"--dtype=bf16 --batched=b --cluster-blocks=2", "--batched=b with --cluster-blocks"},
      {"--dtype=bf16 --batched=both --autotune", "--batched=both with --autotune"},
      {"--dtype=bf16 --batched=b --views=a --batch_stride_a=100", "--batch_stride_a is the distance between the "
                                                                  "products of a batched view of A"},
      {"--dtype=bf16 --batched=both --batch_stride_b=100", "--batch_stride_b is the distance between the products"},
      {"--dtype=bf16 --epilogue=swiglu --batched=both", "--batched=both with --epilogue=swiglu"},
      {"--dtype=e4m3 --b=nk --batched=a", "--batched=a with --dtype=e4m3"},
      {"--dtype=bf16 --batched=all", "--batched=all: expected one of none, both, a, b"},
  };
  for (const Bad &bad : cases)
    check_refused(bad.args, bad.message);
}

TEST_CASE("a batch's launcher takes the batch count after M, N and K and documents the dimensions") {
  TempDir dir;
  Result header = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --batched=a --emit=header --name=linear", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int batch, CUstream stream);"));
  CHECK(has(header.out, "//   A     input  bf16 [batch][M][K]"));
  CHECK(has(header.out, "//   B     input  bf16 [N][K]"));
  CHECK(has(header.out, "//   out   output bf16 [batch][M][N]"));
  CHECK(has(header.out, "batch) blocks of"));
  CHECK(has(header.out, "--batched=a"));
  // Without a batch the signature has no count, as before.
  Result plain = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --emit=header --name=linear", dir.path);
  REQUIRE(plain.status == 0);
  CHECK(has(plain.out, "int M, int N, int K, CUstream stream);"));
  CHECK_FALSE(has(plain.out, "--batched"));
  CHECK_FALSE(has(plain.out, "--batch="));
  // A fixed count is checked by the launcher, as a fixed size is.
  Result fixed = aot("--dtype=bf16 --out-dtype=bf16 --batched=both --batch=8 --emit=header --name=linear", dir.path);
  REQUIRE(fixed.status == 0);
  CHECK(has(fixed.out, "batch fixed at 8 (any other value is rejected)"));
}

TEST_CASE("a batch of a known count takes the tile that fills the GPU with every product's blocks") {
  TempDir dir;
  // One 512 x 512 product would take small tiles; 64 of them fill 132
  // multiprocessors with 128 x 256.
  Result loops = aot("--dtype=bf16 --out-dtype=bf16 --batched=both --batch=64 -M=512 -N=512 -K=512 --emit=loops "
                     "--name=batch --target=sm_90a",
                     dir.path);
  INFO(loops.err);
  REQUIRE(loops.status == 0);
  CHECK(has(loops.out, "for b in gpu_block.z(0, 64):"));
  CHECK(has(loops.out, "for bi in gpu_block.y(0, 4):"));
  CHECK(has(loops.out, "for bj in gpu_block.x(0, 2):"));
  CHECK(has(loops.out, "allocate acc_tile[128][264] f32 in shared"));
}

TEST_CASE("f32's FFMA schedule runs a batch over the grid's z") {
  TempDir dir;
  Result loops = aot("--batched=a --b=nk -M=300 -N=200 -K=64 --emit=loops --name=batch32 --target=sm_90a", dir.path);
  INFO(loops.err);
  REQUIRE(loops.status == 0);
  CHECK(has(loops.out, "gpu_block.z("));
  CHECK_FALSE(has(loops.out, "mma"));
  Result header = aot("--batched=both --emit=header --name=batch32", dir.path);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int batch, CUstream stream);"));
  CHECK(has(header.out, "//   A     input  f32 [batch][M][K]"));
}

TEST_CASE("a strided batch: views of A and B whose products lie their batch strides apart") {
  TempDir dir;
  Result header = aot("--dtype=bf16 --out-dtype=bf16 --batched=both --views=both --emit=header --name=sb", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int batch, int lda, int ldb, int batch_stride_a, int batch_stride_b, "
                        "CUstream stream);"));
  CHECK(has(header.out, "[batch][M][K] (a view: strides batch_stride_a x lda x 1)"));
  CHECK(has(header.out, "[batch][K][N] (a view: strides batch_stride_b x ldb x 1)"));
  // One weight for the batch: B's view has no batch stride.
  Result shared = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --batched=a --views=both --batch_stride_a=300000 "
                      "--emit=header --name=sb",
                      dir.path);
  INFO(shared.err);
  REQUIRE(shared.status == 0);
  CHECK(has(shared.out, "[N][K] (a view: strides ldb x 1)"));
  CHECK(has(shared.out, "batch_stride_a fixed at 300000"));
  CHECK_FALSE(has(shared.out, "batch_stride_b"));
}

TEST_CASE("the batched launcher passes the stand-in driver's checks: sizes, the grid's z, tensor maps of rank 3") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=batched --dtype=bf16 --out-dtype=bf16 --batched=a --b=nk --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_batched", "batched.cpp", "batched launcher checks passed");
}

TEST_CASE("f32's batched launcher passes the stand-in driver's checks: sizes, the grid's z, no tensor maps") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=batched32 --batched=a --b=nk --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_batched_f32", "batched32.cpp", "f32 batched launcher checks passed");
}
