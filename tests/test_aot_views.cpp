// coalesce-aot's inputs that are views (--views=a|b|both, --lda, --ldb):
// the flags it refuses, by name and before anything is written; the
// refusal for a GPU until the GPU check has run views there; the
// launcher's signature and documentation; what it does with the stand-in
// driver (runtime/aot/testing/fake_driver_views.cpp: the views' reach in
// the overlap checks, strides at least 1, tensor maps with the row strides
// and none where a row is no whole 16 bytes). The kernels' numbers are
// tests/test_strided_inputs.cpp's.

#include "AotTool.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace aot_testing;

namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("the flags views cannot take are refused by name") {
  check_refused("--dtype=bf16 --lda=4096", "--lda is the leading dimension of a view: give --views=a");
  check_refused("--dtype=bf16 --ldb=4096", "--ldb is the leading dimension of a view: give --views=b");
  // A batched view (a strided batch) compiles for a GPU once the GPU check
  // has run it (test_aot_batched).
  check_refused("--dtype=bf16 --views=b --epilogue=swiglu", "--views=b with --epilogue=swiglu");
  check_refused("--dtype=e4m3 --b=nk --views=both", "--views=both with --dtype=e4m3");
  check_refused("--dtype=bf16 --views=a --autotune", "--views=a with --autotune");
}

TEST_CASE("f32's FFMA schedule takes views too, with the same launcher signature") {
  TempDir dir;
  Result header = aot("--views=both --emit=header --name=linear32", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int lda, int ldb, CUstream stream);"));
  CHECK(has(header.out, "(a view: strides lda x 1)"));
  Result ptx = aot("--views=a --emit=ptx --name=linear32 --target=sm_90a", dir.path);
  INFO(ptx.err);
  REQUIRE(ptx.status == 0);
  CHECK(has(ptx.out, "fma.rn.f32"));
}

TEST_CASE("a launcher of views takes the leading dimensions after the sizes and documents them") {
  TempDir dir;
  Result header = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --views=b --emit=header --name=linear", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int ldb, CUstream stream);"));
  CHECK(has(header.out, "//   B    input  bf16 [N][K] (a view: strides ldb x 1)"));
  CHECK(has(header.out, "//   A    input  bf16 [M][K]\n"));
  CHECK(has(header.out, "--views=b"));
  Result fixed = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --views=a --lda=4104 --emit=header --name=linear", dir.path);
  REQUIRE(fixed.status == 0);
  CHECK(has(fixed.out, "lda  fixed at 4104 (any other value is rejected)"));
}

TEST_CASE("the launcher of views passes the stand-in driver's checks: reach, strides, tensor maps") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=views --dtype=bf16 --out-dtype=bf16 --b=nk --views=both --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_views", "views.cpp", "views launcher checks passed");
}

TEST_CASE("a column-major output: --out=nm, its columns M or --ldc apart, and the flags refused") {
  TempDir dir;
  Result dense =
      aot("--dtype=bf16 --out-dtype=bf16 --b=nk --out=nm --emit=header,ptx --name=transposed --output-dir=.", dir.path);
  INFO(dense.err);
  REQUIRE(dense.status == 0);
  CHECK(has(read_file(dir.path / "transposed.h"), "int M, int N, int K, CUstream stream);"));
  CHECK(has(read_file(dir.path / "transposed.h"), "//   out  output bf16 [M][N] (column-major: strides 1 x M)"));
  CHECK(has(read_file(dir.path / "transposed.h"), "--out=nm"));
  // The staged tiles leave in vectors down the columns.
  CHECK(has(read_file(dir.path / "transposed.ptx"), "st.global.v4.b32"));
  Result view = aot("--dtype=bf16 --out-dtype=bf16 --out=nm --output-view --emit=header --name=into", dir.path);
  INFO(view.err);
  REQUIRE(view.status == 0);
  CHECK(has(view.out, "int M, int N, int K, int ldc, CUstream stream);"));
  CHECK(has(view.out, "//   out  output bf16 [M][N] (column-major: strides 1 x ldc)"));
  check_refused("--dtype=e4m3 --b=nk --out=nm", "--out=nm with --dtype=e4m3");
  check_refused("--dtype=bf16 --out=nm --autotune", "--out=nm with --autotune");
  // A batch's column-major products, batch_stride apart.
  Result batched = aot("--dtype=bf16 --out-dtype=bf16 --out=nm --batched=both --emit=header --name=b", dir.path);
  INFO(batched.err);
  REQUIRE(batched.status == 0);
  CHECK(has(batched.out, "output bf16 [batch][M][N] (column-major: strides batch_stride x 1 x M)"));
  CHECK(has(batched.out, "int batch_stride"));
}

TEST_CASE("an output view: --output-view and --ldc, the launcher's signature, its checks, and the flags refused") {
  TempDir dir;
  Result header = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --output-view --emit=header --name=linear", dir.path);
  INFO(header.err);
  REQUIRE(header.status == 0);
  CHECK(has(header.out, "int M, int N, int K, int ldc, CUstream stream);"));
  CHECK(has(header.out, "//   out  output bf16 [M][N] (a view: strides ldc x 1)"));
  CHECK(has(header.out, "--output-view=true"));
  check_refused("--dtype=bf16 --ldc=4096", "--ldc is the leading dimension of an output view: give --output-view");
  check_refused("--dtype=e4m3 --b=nk --output-view", "--output-view with --dtype=e4m3");
  // A batch's products batch_stride apart, rows ldc apart; the stride only
  // with a batch's output view.
  Result batched =
      aot("--dtype=bf16 --out-dtype=bf16 --output-view --batched=both --emit=header --name=batched", dir.path);
  INFO(batched.err);
  REQUIRE(batched.status == 0);
  CHECK(has(batched.out, "output bf16 [batch][M][N] (a view: strides batch_stride x ldc x 1)"));
  check_refused("--dtype=bf16 --batch_stride=4096", "--batch_stride is the distance between a batch's products in "
                                                    "an output view: give --batched and --output-view");
  check_refused("--dtype=bf16 --batched=both --batch_stride=4096", "--batch_stride is the distance");
  check_refused("--dtype=bf16 --output-view --autotune", "--output-view with --autotune");
  if (!can_compile_launchers())
    return;
  Result generated =
      aot("--name=output_view --dtype=bf16 --out-dtype=bf16 --b=nk --output-view --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_output_view", "output_view.cpp",
                           "output view launcher checks passed");
}
