// Inputs that are views into larger tensors (Input's strided constructor):
// A(i, k) at i * lda + k, nn.Linear's W(j, k) at j * ldw + k, a batch's
// A(b, i, k) at b * batch_stride + i * lda + k. On the CPU, which runs the
// statements the GPU runs: every path (FFMA; warp MMA; warpgroup MMA with
// cp.async and TMA copies) gives the bits of the same schedule on dense
// copies of the views, at ragged shapes and K = 0 / 1 / 3, with the
// elements outside the views NaN (read one, and the output shows it), with
// leading dimensions that are and are not whole 16-byte vectors (the copies'
// vector and element forms, the TMA's run-time test). The rules: the
// innermost stride is 1, one stride per dimension, a buffer that holds
// what the view reaches; the refusal for a GPU until the GPU check has run
// views there; the PTX assembled by ptxas. (The FFMA path reads B stored
// K x N, B(k, j) rows ldw apart; the tensor-core paths nn.Linear's W.)

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

enum class Path { Ffma, WarpMma, WarpgroupAsync, WarpgroupTma };

const char *path_name(Path p) {
  switch (p) {
  case Path::Ffma: return "FFMA";
  case Path::WarpMma: return "warp MMA";
  case Path::WarpgroupAsync: return "warpgroup MMA, cp.async copies";
  case Path::WarpgroupTma: return "warpgroup MMA, TMA copies";
  }
  return "";
}

Type input_type(Path p) { return p == Path::Ffma ? Float(32) : BFloat(16); }

/// W's rows: N x K (nn.Linear's) on tensor cores, K x N for FFMA.
bool w_nk(Path p) { return p != Path::Ffma; }

/// out = gelu(A W^T + bias) (A W for FFMA), A M x K; as views (A rows lda
/// apart, W rows ldw apart: Params) or dense; scheduled for `path`.
struct Linear {
  Param M{"M"}, N{"N"}, K{"K"}, lda{"lda"}, ldw{"ldw"};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, W, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};

  Linear(Path path, bool views)
      : A(views ? Input("A", input_type(path), {M, K}, {lda, 1}) : Input("A", input_type(path), {M, K})),
        W(views ? Input("W", input_type(path), w_extents(path), {ldw, 1})
                : Input("W", input_type(path), w_extents(path))) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * (w_nk(path) ? W(j, k) : W(k, j));
    out(i, j) = gelu(acc(i, j) + bias(j));
    if (path == Path::Ffma) {
      schedule_gemm(out, acc, A, W, i, j, k, default_gemm_tiling(0, 0, 0, 132));
      return;
    }
    MmaKind kind = path == Path::WarpMma ? MmaKind::BF16_m16n8k16 : MmaKind::BF16_wgmma_m64k16;
    MmaTiling t = default_mma_tiling(kind, 4096, 4096, 132);
    if (path != Path::WarpMma)
      t.tma = path == Path::WarpgroupTma;
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
  }
  std::vector<Expr> w_extents(Path path) const {
    return w_nk(path) ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N};
  }
};

/// A rows x columns matrix of random values inside a rows x ld buffer whose
/// other elements are NaN.
Buffer view_buffer(Type type, int rows, int columns, int ld, uint32_t seed) {
  Buffer dense({rows, columns}, type), parent({rows, ld}, type);
  dense.fill_random(seed);
  for (size_t e = 0; e < parent.size(); ++e)
    parent.set(e, std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c)
      parent.set(size_t(r) * ld + c, dense.get(size_t(r) * columns + c));
  return parent;
}

/// The view's elements as a dense buffer.
Buffer dense_copy(const Buffer &parent, int rows, int columns, int ld) {
  Buffer dense({rows, columns}, parent.type());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c)
      dense.set(size_t(r) * columns + c, parent.get(size_t(r) * ld + c));
  return dense;
}

void check_views(Path path, int M, int N, int K, int lda, int ldw) {
  INFO(path_name(path), ", ", M, " x ", N, " x ", K, ", lda ", lda, ", ldw ", ldw);
  Linear views(path, true), dense(path, false);
  Type type = input_type(path);
  const int w_rows = w_nk(path) ? N : K, w_columns = w_nk(path) ? K : N;
  Buffer a = view_buffer(type, M, K, lda, 61), w = view_buffer(type, w_rows, w_columns, ldw, 62), bias({N});
  bias.fill_random(63);
  Buffer a_dense = dense_copy(a, M, K, lda), w_dense = dense_copy(w, w_rows, w_columns, ldw);
  Buffer got({M, N}), want({M, N});
  got.poison();
  want.poison();
  Pipeline(views.out).realize_on_cpu(
      {{"A", a}, {"W", w}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}, {"lda", lda}, {"ldw", ldw}}, got);
  Pipeline(dense.out).realize_on_cpu({{"A", a_dense}, {"W", w_dense}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}},
                                     want);
  CHECK(coalesce::testing::same_bits(got, want));
  size_t nan = 0;
  for (float v : got.values())
    nan += std::isnan(v) ? 1 : 0;
  CHECK(nan == 0);
}

} // namespace

TEST_CASE("views into larger tensors give the bits of their dense copies on every path; nothing outside is read") {
  for (Path path : {Path::Ffma, Path::WarpMma, Path::WarpgroupAsync, Path::WarpgroupTma}) {
    // Leading dimensions of whole 16-byte vectors (vector copies, the TMA)
    // and of odd elements (element copies; the TMA's test fails at run time).
    const int n_extra = w_nk(path) ? 0 : 40; // FFMA's W rows run along N (75)
    check_views(path, 70, 75, 40, 48, 56 + n_extra);
    check_views(path, 70, 75, 37, 45, 50 + n_extra);
    check_views(path, 70, 75, 40, 44, 52 + n_extra); // rows of whole vectors, 4 elements apart
    // Rows that start whole vectors apart but end ragged (K = 37, rows 48
    // apart): no 16-byte copy may start inside the row's last vector. Both
    // views aligned, so the TMA reads them (zero past K).
    check_views(path, 70, 75, 37, 48, 56 + n_extra);
    check_views(path, 131, 264, 72, 72, w_nk(path) ? 80 : 264); // a leading dimension equal to the row: dense
  }
}

TEST_CASE("a view's copies test its leading dimensions for 16-byte vectors and the TMA, and its rows' length") {
  // On the CPU a misaligned vector reads the right values; on a GPU it
  // faults. The run-time tests name the strides.
  for (Path path : {Path::WarpgroupAsync, Path::WarpgroupTma}) {
    INFO(path_name(path));
    Linear l(path, true);
    std::string nest = Pipeline(l.out).loop_nest();
    CHECK(nest.find("lda % 8") != std::string::npos);
    CHECK(nest.find("ldw % 8") != std::string::npos);
    // The 16-byte copies (the TMA's fallback too) also need whole vectors
    // in a row: K.
    CHECK(nest.find("K % 8") != std::string::npos);
  }
}

TEST_CASE("a view's epilogue runs once per element, after its whole reduction (K = 0 / 1 / 3)") {
  for (int K : {0, 1, 3}) {
    for (Path path : {Path::WarpMma, Path::WarpgroupTma})
      check_views(path, 33, 40, K, K + 8, K + 5);
    check_views(Path::Ffma, 33, 40, K, K + 8, 45);
  }
}

TEST_CASE("a batch whose inputs are views: strides for the batch and the rows") {
  Param batch("Batch"), M("M"), N("N"), K("K"), lda("lda"), batch_stride("batch_stride");
  Var b("b"), i("i"), j("j");
  RDom k(0, K, "k");
  auto build = [&](bool views, Func &out) {
    Input A =
        views ? Input("A", BFloat(16), {batch, M, K}, {batch_stride, lda, 1}) : Input("A", BFloat(16), {batch, M, K});
    Input W("W", BFloat(16), {N, K}), bias("bias", Float(32), {N});
    Func acc("acc");
    acc(b, i, j) = 0.0f;
    acc(b, i, j) += A(b, i, k) * W(j, k);
    out(b, i, j) = cast(BFloat(16), gelu(acc(b, i, j) + bias(j)));
    MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 132);
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
  };
  Func viewed("out"), dense("out");
  build(true, viewed);
  build(false, dense);
  const int count = 3, rows = 70, n = 72, depth = 64, ld = 80, stride = rows * ld + 24;
  // The products lie stride elements apart, their rows ld apart; NaN between.
  Buffer parent({count * stride}, BFloat(16)), a({count, rows, depth}, BFloat(16)), w({n, depth}, BFloat(16)),
      bias({n});
  a.fill_random(71);
  w.fill_random(72);
  bias.fill_random(73);
  for (size_t e = 0; e < parent.size(); ++e)
    parent.set(e, std::numeric_limits<float>::quiet_NaN());
  for (int z = 0; z < count; ++z)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < depth; ++c)
        parent.set(size_t(z) * stride + size_t(r) * ld + c, a.get((size_t(z) * rows + r) * depth + c));
  Buffer got({count, rows, n}, BFloat(16)), want({count, rows, n}, BFloat(16));
  got.poison();
  want.poison();
  Pipeline(viewed).realize_on_cpu({{"A", parent},
                                   {"W", w},
                                   {"bias", bias},
                                   {"Batch", count},
                                   {"M", rows},
                                   {"N", n},
                                   {"K", depth},
                                   {"lda", ld},
                                   {"batch_stride", stride}},
                                  got);
  Pipeline(dense).realize_on_cpu(
      {{"A", a}, {"W", w}, {"bias", bias}, {"Batch", count}, {"M", rows}, {"N", n}, {"K", depth}}, want);
  CHECK(coalesce::testing::same_bits(got, want));
}

TEST_CASE("a view's rules: one stride per dimension, the innermost contiguous, a buffer holding what it reaches") {
  Param M("M"), K("K"), lda("lda");
  CHECK_HAS(coalesce::testing::user_error_of([&] {
              Input("A", Float(32), {M, K}, {lda});
            }),
            "Input 'A' has 2 dimensions but 1 strides");
  CHECK_HAS(coalesce::testing::user_error_of([&] {
              Input("A", Float(32), {M, K}, {1, M});
            }),
            "the innermost dimension must be contiguous (stride 1)");
  CHECK_HAS(coalesce::testing::user_error_of([&] {
              Input("A", Float(32), {M, K}, {0, 1});
            }),
            "stride 0 is 0; strides must be at least 1");
  Linear l(Path::Ffma, true); // W 20 x 8
  Buffer a({10, 20}), w({20, 8}), bias({8}), out({10, 8});
  // Rows 24 apart: the last row ends at 9 * 24 + 19 = 235, past a's 200.
  std::string message = coalesce::testing::user_error_of([&] {
    Pipeline(l.out).realize_on_cpu(
        {{"A", a}, {"W", w}, {"bias", bias}, {"M", 10}, {"N", 8}, {"K", 20}, {"lda", 24}, {"ldw", 8}}, out);
  });
  CHECK_HAS(message, "input buffer 'A' holds 200 elements, but the view (extents M x K, strides lda x 1) reaches "
                     "element 235");
  CHECK_HAS(coalesce::testing::user_error_of([&] {
              Pipeline(l.out).realize_on_cpu(
                  {{"A", a}, {"W", w}, {"bias", bias}, {"M", 10}, {"N", 8}, {"K", 20}, {"lda", 0}, {"ldw", 8}}, out);
            }),
            "input 'A' is a view with stride 0 (lda) in dimension 0");
}

TEST_CASE("for a GPU a view's kernel tests its leading dimensions at run time and assembles cleanly") {
  Linear l(Path::WarpgroupTma, true);
  Pipeline pipeline(l.out);
  std::string ptx = pipeline.ptx();
  // The kernel tests the leading dimensions at run time (TMA or cp.async).
  CHECK(ptx.find("cp.async.bulk.tensor.2d") != std::string::npos);
  CHECK(ptx.find("cp.async.cg.shared.global") != std::string::npos);
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("FFMA reads nn.Linear's W (N x K) as a view too: the dense copy's bits") {
  // The form coalesce-gpu-check's fp32 views run (bench/gpu_check/StridedCheck.cpp).
  Param M("M"), N("N"), K("K"), lda("lda"), ldw("ldw");
  Var i("i"), j("j");
  RDom k(0, K, "k");
  auto build = [&](bool views, Func &out) {
    Input A = views ? Input("A", Float(32), {M, K}, {lda, 1}) : Input("A", Float(32), {M, K});
    Input W = views ? Input("W", Float(32), {N, K}, {ldw, 1}) : Input("W", Float(32), {N, K});
    Input bias("bias", Float(32), {N});
    Func acc("acc");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * W(j, k);
    out(i, j) = gelu(acc(i, j) + bias(j));
    schedule_gemm(out, acc, A, W, i, j, k, default_gemm_tiling(0, 0, 0, 132));
  };
  for (auto [m, n, kk, la, lw] : std::vector<std::array<int, 5>>{{131, 133, 67, 75, 70}, {70, 75, 3, 8, 5}}) {
    CAPTURE(m);
    CAPTURE(kk);
    Func views_out("out"), dense_out("out");
    build(true, views_out);
    build(false, dense_out);
    Buffer a = view_buffer(Float(32), m, kk, la, 71), w = view_buffer(Float(32), n, kk, lw, 72), bias({n});
    bias.fill_random(73);
    Buffer got({m, n}), want({m, n});
    got.poison();
    want.poison();
    Pipeline(views_out).realize_on_cpu(
        {{"A", a}, {"W", w}, {"bias", bias}, {"M", m}, {"N", n}, {"K", kk}, {"lda", la}, {"ldw", lw}}, got);
    Pipeline(dense_out).realize_on_cpu({{"A", dense_copy(a, m, kk, la)},
                                        {"W", dense_copy(w, n, kk, lw)},
                                        {"bias", bias},
                                        {"M", m},
                                        {"N", n},
                                        {"K", kk}},
                                       want);
    CHECK(coalesce::testing::same_bits(got, want));
  }
}

TEST_CASE("for a GPU, FFMA's views take their two leading dimensions as the kernel's parameters") {
  Linear views(Path::Ffma, true), dense(Path::Ffma, false);
  auto parameters = [](const std::string &ptx) {
    size_t count = 0;
    for (size_t at = ptx.find("\t.param "); at != std::string::npos; at = ptx.find("\t.param ", at + 1))
      ++count;
    return count;
  };
  std::string with_views = Pipeline(views.out).ptx(), without = Pipeline(dense.out).ptx();
  CHECK(parameters(with_views) == parameters(without) + 2); // lda and ldw
}
