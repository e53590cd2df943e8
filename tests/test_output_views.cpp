// An output that is a view into a larger tensor (Func::output_strides): out
// (i, j) stored at i * ldc + j, as BLAS's C with its leading dimension, a
// slice of a wider activation, or a batch's products any stride apart. On
// the CPU, which runs the statements the GPU runs: every path (FFMA; warp
// MMA; warpgroup MMA with cp.async and TMA copies, tiles stored directly
// and through shared memory, the staged sums; split-K combined by the last
// block and by a kernel of its own) writes the bits of the same schedule's
// dense output, and leaves every element between the rows as the caller's
// buffer held it, at ragged shapes and K = 0 / 1 / 3, with leading
// dimensions that are and are not whole 16-byte vectors (the staged
// copy's vector and element forms). The rules: only the output, one stride
// per dimension, the innermost 1 (or the next-to-innermost: column-major),
// a buffer that holds what the view reaches; the refusal for a GPU until
// the GPU check has run output views there; the kernels assembled by ptxas.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "OutputViewGemm.h"
#include "SplitKGemm.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace coalesce;
using coalesce::testing::input_type;
using coalesce::testing::LayoutGemm;
using coalesce::testing::output_type;
using coalesce::testing::OutputLayout;
using coalesce::testing::Path;
using coalesce::testing::path_name;

namespace {

constexpr float kBetweenRows = -123.0f; // exact in bf16

void check_view(Path path, int M, int N, int K, int ldc) {
  coalesce::testing::check_against_dense(path, OutputLayout::RowsApart, M, N, K, ldc, kBetweenRows, 71);
}

} // namespace

TEST_CASE("an output view gets the dense output's bits on every path, and nothing between its rows is written") {
  for (Path path : {Path::Ffma, Path::WarpMma, Path::WarpgroupAsync, Path::WarpgroupTma, Path::WarpgroupSums,
                    Path::SplitKLastBlock, Path::SplitKKernel}) {
    // Rows of whole 16-byte vectors (the staged copy's vector form), then
    // not (its element form), at ragged shapes.
    check_view(path, 70, 72, 37, 80);
    check_view(path, 131, 136, 72, 139);
    // Rows that start whole vectors apart but end ragged: the last vector
    // of a row would reach between the rows.
    check_view(path, 131, 133, 67, 136);
  }
  // The epilogue once per element, after the whole reduction.
  for (int K : {0, 1, 3}) {
    check_view(Path::WarpgroupTma, 67, 40, K, 48);
    check_view(Path::Ffma, 67, 40, K, 45);
  }
}

TEST_CASE("a batch's output view: products any stride apart, rows ldc apart") {
  using examples::BatchedGemm;
  using examples::BatchedOperands;
  const int batch = 3, M = 70, N = 72, K = 37, ldc = 80, batch_stride = M * ldc + 16;
  BatchedGemm view(BFloat(16), BFloat(16), BatchedOperands::Both), dense(BFloat(16), BFloat(16), BatchedOperands::Both);
  view.out.output_strides({Expr(batch_stride), Expr(ldc), 1});
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 132);
  view.schedule_mma(t);
  dense.schedule_mma(t);
  Buffer a(view.a_shape(batch, M, K), BFloat(16)), b(view.b_shape(batch, N, K), BFloat(16)), bias({N});
  a.fill_random(74);
  b.fill_random(75);
  bias.fill_random(76);
  Buffer got({(batch - 1) * batch_stride + (M - 1) * ldc + N}, BFloat(16)), want({batch, M, N}, BFloat(16));
  for (size_t e = 0; e < got.size(); ++e)
    got.set(e, kBetweenRows);
  Pipeline(view.out).realize_on_cpu(view.arguments(a, b, bias, batch, M, N, K), got);
  Pipeline(dense.out).realize_on_cpu(dense.arguments(a, b, bias, batch, M, N, K), want);
  size_t differ = 0, written = 0;
  for (int z = 0; z < batch; ++z)
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        differ +=
            got.get(size_t(z) * batch_stride + size_t(r) * ldc + c) == want.get((size_t(z) * M + r) * N + c) ? 0 : 1;
      }
  for (size_t e = 0; e < got.size(); ++e)
    written += got.get(e) == kBetweenRows ? 0 : 1;
  CHECK(differ == 0);
  CHECK(written == size_t(batch) * M * N);
}

TEST_CASE("an output view's rules: only the output, one stride per dimension, one of them 1, a buffer that holds it") {
  using coalesce::testing::user_error_of;
  Param M("M"), N("N"), ldc("ldc");
  Input A("A", Float(32), {M, N});
  Var i("i"), j("j");
  {
    Func f("f");
    f(i, j) = A(i, j);
    CHECK_HAS(user_error_of([&] { f.output_strides({ldc}); }),
              "the output strides of 'f' has 2 dimensions but 1 strides");
    // {1, ldc} is column-major (tests/test_column_major_output.cpp); a
    // stride 1 in neither of the last two dimensions is refused.
    CHECK_HAS(user_error_of([&] {
                f.output_strides({ldc, ldc});
              }),
              "the output strides of 'f': the innermost stride is ldc and the next-to-innermost ldc; an output is "
              "stored row-major (the innermost stride 1: output_strides({ldc, 1})) or column-major");
    CHECK_HAS(user_error_of([&] { f.output_strides({0, 1}); }), "stride 0 is 0; strides must be at least 1");
  }
  {
    Func before("before");
    CHECK_HAS(user_error_of([&] {
                before.output_strides({ldc, 1});
              }),
              "output_strides of 'before' before its definition");
  }
  {
    Func f("f"), g("g");
    f(i, j) = A(i, j) * 2.0f;
    f.output_strides({ldc, 1});
    g(i, j) = f(i, j) + 1.0f;
    CHECK_HAS(user_error_of([&] { Pipeline(g).loop_nest(); }),
              "'f' declares output strides, but the pipeline's output is 'g'");
  }
  Func f("f");
  f(i, j) = A(i, j) * 2.0f;
  f.output_strides({ldc, 1});
  Pipeline p(f);
  Buffer a({4, 6}), small({3 * 8 + 5}), out({3 * 8 + 6});
  a.fill_random(1);
  CHECK_HAS(user_error_of([&] {
              p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 6}, {"ldc", 8}}, small);
            }),
            "output buffer 'f' holds 29 elements, but the view (extents M x N, strides ldc x 1) reaches element 29");
  CHECK_HAS(user_error_of([&] {
              p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 6}, {"ldc", 0}}, out);
            }),
            "output 'f' is a view with stride 0 (ldc) in dimension 0");
  // An empty view writes nothing, whatever its buffer holds.
  for (size_t e = 0; e < out.size(); ++e)
    out.set(e, kBetweenRows);
  p.realize_on_cpu({{"A", Buffer({0, 6})}, {"M", 0}, {"N", 6}, {"ldc", 8}}, out);
  CHECK(out.get(0) == kBetweenRows);
  p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 6}, {"ldc", 8}}, out);
  CHECK(out.get(8) == a.get(6) * 2.0f);
  CHECK(out.get(6) == kBetweenRows);
}

TEST_CASE("an output view whose elements overlap is refused: the schedule would choose which store lands") {
  // Rows 2 apart hold 4 elements each: out(0, 2) and out(1, 0) share an
  // address. Stored row by row, the later row's elements land there; with
  // j outermost, the earlier row's. Both schedules are refused when bound,
  // with the stride that must grow, before anything is written.
  Param M{"M"}, N{"N"}, ldc{"ldc"}, batch_stride{"batch_stride"};
  Var b{"b"}, i{"i"}, j{"j"};
  Input A("A", Float(32), {M, N});
  Buffer a({4, 4});
  a.fill_random(2);
  for (bool j_outermost : {false, true}) {
    Func out("out");
    out(i, j) = A(i, j) + 0.5f;
    out.output_strides({ldc, 1});
    if (j_outermost)
      out.reorder({j, i});
    Pipeline p(out);
    Buffer buffer({3 * 4 + 4});
    for (size_t e = 0; e < buffer.size(); ++e)
      buffer.set(e, kBetweenRows);
    CHECK_HAS(coalesce::testing::user_error_of([&] {
                p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 4}, {"ldc", 2}}, buffer);
              }),
              "output 'out' is a view whose elements overlap: its stride 2 (ldc) in dimension 0 steps less than "
              "the 4 elements the dimensions with smaller strides span (extents M x N = 4 x 4), so two of its "
              "elements would be stored at one address, and which lands last would depend on the schedule; pass "
              "strides that step past each other (ldc >= 4)");
    for (size_t e = 0; e < buffer.size(); ++e)
      CHECK(buffer.get(e) == kBetweenRows);
    // Rows exactly N apart are the dense layout; one row overlaps nothing.
    p.realize_on_cpu({{"A", a}, {"M", 4}, {"N", 4}, {"ldc", 4}}, buffer);
    CHECK(buffer.get(13) == a.get(13) + 0.5f);
    p.realize_on_cpu({{"A", Buffer({1, 4})}, {"M", 1}, {"N", 4}, {"ldc", 1}}, buffer);
  }
  // A batch: each product must start past the previous one's last element,
  // (M - 1) * ldc + N = 3 * 5 + 4 = 19 elements on.
  Input X("X", Float(32), {Expr(2), M, N});
  Func batched("batched");
  batched(b, i, j) = X(b, i, j) * 2.0f;
  batched.output_strides({batch_stride, ldc, 1});
  Pipeline p(batched);
  Buffer x({2, 4, 4}), buffer({18 + 3 * 5 + 4});
  x.fill_random(3);
  CHECK_HAS(coalesce::testing::user_error_of([&] {
              p.realize_on_cpu({{"X", x}, {"M", 4}, {"N", 4}, {"ldc", 5}, {"batch_stride", 18}}, buffer);
            }),
            "its stride 18 (batch_stride) in dimension 0 steps less than the 19 elements the dimensions with "
            "smaller strides span (extents 2 x M x N = 2 x 4 x 4)");
  Buffer room({19 + 3 * 5 + 4});
  p.realize_on_cpu({{"X", x}, {"M", 4}, {"N", 4}, {"ldc", 5}, {"batch_stride", 19}}, room);
  CHECK(room.get(19 + 5 + 1) == x.get(16 + 4 + 1) * 2.0f);
}

TEST_CASE("an output view's kernels test its leading dimension for the staged copy's vectors and assemble cleanly") {
  LayoutGemm view(Path::WarpgroupTma, OutputLayout::RowsApart);
  Pipeline pipeline(view.out);
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "N % 8 == 0 && ldc % 8 == 0");
  std::string ptx = pipeline.ptx();
  CHECK(ptx.find("st.global.v4.b32") != std::string::npos);
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}
