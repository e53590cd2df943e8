#pragma once
// The fused GEMM the output-layout tests run on every path: out = gelu(A B +
// bias), out dense, a view with rows ldc apart (output_strides({ldc, 1})),
// or column-major with columns ldc apart (output_strides({1, ldc})), on
// FFMA, warp MMA, warpgroup MMA (cp.async and direct stores; TMA with tiles
// or sums through shared memory) and split-K (the last block's combine, the
// combine kernel): the layout matrix's GEMM (bench/gpu_check/
// LayoutMatrixGemm.h) with A and B dense.

#include "bench/gpu_check/LayoutMatrixGemm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

namespace coalesce::testing {

using layout_matrix::input_type;
using layout_matrix::output_type;
using layout_matrix::Path;
using layout_matrix::path_name;

/// How out is stored: dense (row-major, rows N apart), rows ldc apart, or
/// column-major with columns ldc apart (out(i, j) at i + j * ldc).
using OutputLayout = layout_matrix::Out;

/// out = gelu(A B + bias), stored as `layout` says, A M x K and B K x N.
struct LayoutGemm : layout_matrix::MatrixGemm {
  LayoutGemm(Path path, OutputLayout layout) : MatrixGemm(path, layout_matrix::Layout{false, false, layout, false}) {}
};

/// The layout's output against the dense one, the same schedule on the CPU,
/// at M x N x K with rows (columns, for a column-major output) ldc apart:
/// its buffer ends at its last element and holds `between` elsewhere; every
/// element must have the dense output's bits, and nothing between the rows
/// (columns) may be written. The inputs are random from `seed` on.
inline void check_against_dense(Path path, OutputLayout layout, int M, int N, int K, int ldc, float between,
                                uint32_t seed) {
  INFO(path_name(path), ", ", M, " x ", N, " x ", K, ", ldc ", ldc);
  LayoutGemm view(path, layout), dense(path, OutputLayout::Dense);
  Buffer a({M, K}, input_type(path)), b({K, N}, input_type(path)), bias({N});
  a.fill_random(seed);
  b.fill_random(seed + 1);
  bias.fill_random(seed + 2);
  // Runs along the contiguous dimension: rows, or a column-major output's
  // columns.
  const bool column_major = layout == OutputLayout::ColumnMajor;
  const int length = column_major ? M : N, runs = column_major ? N : M;
  Buffer got({(runs - 1) * ldc + length}, output_type(path)), want({M, N}, output_type(path));
  for (size_t e = 0; e < got.size(); ++e)
    got.set(e, between);
  want.poison();
  Pipeline(view.out).realize_on_cpu({{"A", a}, {"B", b}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}, {"ldc", ldc}},
                                    got);
  Pipeline(dense.out).realize_on_cpu({{"A", a}, {"B", b}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}}, want);
  size_t differ = 0, between_changed = 0, nan = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    size_t run = e / size_t(ldc), along = e % size_t(ldc);
    size_t row = column_major ? along : run, column = column_major ? run : along;
    float v = got.get(e);
    if (along < size_t(length)) {
      nan += std::isnan(v) ? 1 : 0;
      differ += v == want.get(row * N + column) ? 0 : 1;
    } else {
      between_changed += v == between ? 0 : 1;
    }
  }
  CHECK(nan == 0);
  CHECK(differ == 0);
  CHECK(between_changed == 0);
}

} // namespace coalesce::testing
