// An output stored column-major (Func::output_strides({1, ldc}): out(i, j)
// at i + j * ldc, BLAS's C of a column-major caller, or the transposed
// product a caller wants without a transpose kernel). The algorithm is the
// same; only where each element lands changes. On the CPU, which runs the
// statements the GPU runs: every path (FFMA; warp MMA; warpgroup MMA with
// cp.async and TMA copies, tiles stored directly and through shared memory,
// the staged sums; split-K combined by the last block and by a kernel of
// its own) writes the dense output's bits at the transposed places and
// nothing between the columns, at ragged shapes and K = 0 / 1 / 3, with
// columns that are and are not whole 16-byte vectors (the staged copy-out
// in vectors down the columns, or element by element). The rules: the
// next-to-innermost stride the constant 1 (or the innermost: row-major),
// columns that do not overlap, only for the output; refused for a GPU as
// every output view is until the GPU check has run them there.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "OutputViewGemm.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace coalesce;
using coalesce::testing::LayoutGemm;
using coalesce::testing::OutputLayout;
using coalesce::testing::Path;
using coalesce::testing::user_error_of;

namespace {

constexpr float kBetweenColumns = -123.0f; // exact in bf16

void check_column_major(Path path, int M, int N, int K, int ldc) {
  coalesce::testing::check_against_dense(path, OutputLayout::ColumnMajor, M, N, K, ldc, kBetweenColumns, 81);
}

} // namespace

TEST_CASE("a column-major output gets the dense output's bits, transposed, on every path") {
  for (Path path : {Path::Ffma, Path::WarpMma, Path::WarpgroupAsync, Path::WarpgroupTma, Path::WarpgroupSums,
                    Path::SplitKLastBlock, Path::SplitKKernel}) {
    // Columns of whole 16-byte vectors (the staged copy-out's vectors down
    // each column), then not (element by element), at ragged shapes.
    check_column_major(path, 72, 70, 37, 80);
    check_column_major(path, 131, 136, 72, 139);
    // Columns that start whole vectors apart but end ragged: the last
    // vector of a column would reach between the columns.
    check_column_major(path, 133, 131, 67, 136);
    // Dense column-major: columns exactly M apart.
    check_column_major(path, 136, 67, 40, 136);
  }
  // The epilogue once per element, after the whole reduction.
  for (int K : {0, 1, 3}) {
    check_column_major(Path::WarpgroupTma, 40, 67, K, 48);
    check_column_major(Path::WarpgroupSums, 40, 67, K, 48);
    check_column_major(Path::Ffma, 40, 67, K, 45);
  }
}

TEST_CASE("a column-major output's rules: stride 1 next to the innermost, columns apart, only the output") {
  Param M("M"), N("N"), ldc("ldc");
  Var i("i"), j("j");
  Input A("A", Float(32), {M, N});
  auto refusal = [&](std::vector<Expr> strides) {
    return user_error_of([&] {
      Func f("f");
      f(i, j) = A(i, j) * 2.0f;
      f.output_strides(std::move(strides));
    });
  };
  CHECK_HAS(refusal({ldc, 2}), "the output strides of 'f': the innermost stride is 2 and the next-to-innermost ldc; "
                               "an output is stored row-major (the innermost stride 1: output_strides({ldc, 1})) "
                               "or column-major (the next-to-innermost stride 1: output_strides({1, ldc})");
  CHECK_HAS(refusal({ldc, ldc}), "the innermost stride is ldc and the next-to-innermost ldc");
  CHECK_HAS(refusal({0, ldc}), "stride 0 is 0; strides must be at least 1");
  // An Input keeps its rule: a column-major input is declared the other way
  // round and read with its coordinates swapped.
  CHECK_HAS(user_error_of([&] {
              Input("X", Float(32), {M, N}, {1, ldc});
            }),
            "Input 'X': the innermost stride is ldc; the innermost dimension must be contiguous (stride 1)");

  Func f("f");
  f(i, j) = A(i, j) * 2.0f;
  f.output_strides({1, ldc});
  Pipeline p(f);
  Buffer a({4, 6});
  a.fill_random(4);
  // Columns closer than M elements overlap: refused when bound, nothing
  // written.
  Buffer small({5 * 3 + 4});
  for (size_t e = 0; e < small.size(); ++e)
    small.set(e, kBetweenColumns);
  CHECK_HAS(user_error_of([&] {
              p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 6}, {"ldc", 3}}, small);
            }),
            "output 'f' is a view whose elements overlap: its stride 3 (ldc) in dimension 1 steps less than the 4 "
            "elements the dimensions with smaller strides span");
  for (size_t e = 0; e < small.size(); ++e)
    CHECK(small.get(e) == kBetweenColumns);
  Buffer out({5 * 5 + 4});
  p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 6}, {"ldc", 5}}, out);
  CHECK(out.get(2 * 5 + 3) == a.get(3 * 6 + 2) * 2.0f); // f(3, 2)
}

TEST_CASE("a column-major output's staged copy-out stores vectors down the columns, and its kernels assemble") {
  for (Path path : {Path::WarpgroupTma, Path::WarpgroupSums}) {
    INFO(coalesce::testing::path_name(path));
    LayoutGemm column_major(path, OutputLayout::ColumnMajor);
    Pipeline pipeline(column_major.out);
    std::string nest = pipeline.loop_nest();
    // Whole vectors down every column: M and ldc whole vectors.
    CHECK_HAS(nest, "M % 8 == 0 && ldc % 8 == 0");
    CHECK_HAS(nest, "out_tile.vector");
    std::string ptx = pipeline.ptx();
    CHECK(ptx.find("st.global.v4.b32") != std::string::npos);
    if (ptxas_available())
      coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  }
}

TEST_CASE("a batch's column-major output: products any stride apart, columns ldc apart") {
  using examples::BatchedGemm;
  using examples::BatchedOperands;
  const int batch = 3, M = 72, N = 70, K = 37, ldc = 80, batch_stride = N * ldc + 24;
  BatchedGemm column_major(BFloat(16), BFloat(16), BatchedOperands::Both),
      dense(BFloat(16), BFloat(16), BatchedOperands::Both);
  column_major.out.output_strides({Expr(batch_stride), 1, Expr(ldc)});
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 132);
  column_major.schedule_mma(t);
  dense.schedule_mma(t);
  Buffer a(column_major.a_shape(batch, M, K), BFloat(16)), b(column_major.b_shape(batch, N, K), BFloat(16)), bias({N});
  a.fill_random(87);
  b.fill_random(88);
  bias.fill_random(89);
  Buffer got({(batch - 1) * batch_stride + (N - 1) * ldc + M}, BFloat(16)), want({batch, M, N}, BFloat(16));
  for (size_t e = 0; e < got.size(); ++e)
    got.set(e, kBetweenColumns);
  Pipeline(column_major.out).realize_on_cpu(column_major.arguments(a, b, bias, batch, M, N, K), got);
  Pipeline(dense.out).realize_on_cpu(dense.arguments(a, b, bias, batch, M, N, K), want);
  size_t differ = 0, written = 0;
  for (int z = 0; z < batch; ++z)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c)
        differ +=
            got.get(size_t(z) * batch_stride + size_t(c) * ldc + r) == want.get((size_t(z) * M + r) * N + c) ? 0 : 1;
  for (size_t e = 0; e < got.size(); ++e)
    written += got.get(e) == kBetweenColumns ? 0 : 1;
  CHECK(differ == 0);
  CHECK(written == size_t(batch) * M * N);
}
