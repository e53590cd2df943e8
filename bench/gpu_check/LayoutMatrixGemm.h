#pragma once
// The fused GEMM out = gelu(A B + bias) in every operand and output layout:
// A stored M x K or K x M, B stored K x N or N x K (nn.Linear's weight),
// out dense, a view with rows ldc apart, or column-major with columns ldc
// apart; scheduled for one path (FFMA, the warp MMA, the warpgroup MMA with
// cp.async or the TMA and the tile or the sums through shared memory,
// split-K with either combine). tests/test_layout_matrix.cpp runs every
// combination on the CPU, and coalesce-gpu-check's strided section on the
// GPU, each against the dense layouts' bits.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"

#include <cmath>
#include <cstddef>
#include <vector>

namespace coalesce::layout_matrix {

enum class Path { Ffma, WarpMma, WarpgroupAsync, WarpgroupTma, WarpgroupSums, SplitKLastBlock, SplitKKernel };
inline constexpr Path kPaths[] = {Path::Ffma,          Path::WarpMma,         Path::WarpgroupAsync, Path::WarpgroupTma,
                                  Path::WarpgroupSums, Path::SplitKLastBlock, Path::SplitKKernel};

inline const char *path_name(Path p) {
  switch (p) {
  case Path::Ffma: return "FFMA";
  case Path::WarpMma: return "warp MMA";
  case Path::WarpgroupAsync: return "warpgroup MMA, cp.async, direct stores";
  case Path::WarpgroupTma: return "warpgroup MMA, TMA, tiles through shared memory";
  case Path::WarpgroupSums: return "warpgroup MMA, TMA, sums through shared memory";
  case Path::SplitKLastBlock: return "warpgroup MMA split 3 ways, the last block's combine";
  case Path::SplitKKernel: return "warpgroup MMA split 3 ways, the combine kernel";
  }
  return "";
}

enum class Out { Dense, RowsApart, ColumnMajor };

inline const char *out_name(Out o) {
  switch (o) {
  case Out::Dense: return "out M x N";
  case Out::RowsApart: return "out rows ldc apart";
  case Out::ColumnMajor: return "out column-major, columns ldc apart";
  }
  return "";
}

struct Layout {
  bool a_km = false, b_nk = false;
  Out out = Out::Dense;
  /// A batch of products (a dimension before the product's two in A, B and
  /// out; an output view's products batch_stride apart): the tensor-core
  /// paths without split-K only.
  bool batched = false;
};

inline Type input_type(Path p) { return p == Path::Ffma ? Float(32) : BFloat(16); }
inline Type output_type(Path p) { return p == Path::Ffma ? Float(32) : BFloat(16); }

/// out = gelu(A B + bias) in `layout`, scheduled for `path`.
struct MatrixGemm {
  Param batch{"Batch"}, M{"M"}, N{"N"}, K{"K"}, ldc{"ldc"}, batch_stride{"batch_stride"};
  Var b{"b"}, i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, B, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};

  MatrixGemm(Path path, const Layout &layout)
      : A("A", input_type(path), with_batch(layout, layout.a_km ? std::vector<Expr>{K, M} : std::vector<Expr>{M, K})),
        B("B", input_type(path), with_batch(layout, layout.b_nk ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N})) {
    auto at = [&](Expr x, Expr y) { return with_batch(layout, {x, y}, b); };
    acc(at(i, j)) = 0.0f;
    acc(at(i, j)) += (layout.a_km ? A(at(k, i)) : A(at(i, k))) * (layout.b_nk ? B(at(j, k)) : B(at(k, j)));
    out(at(i, j)) = cast(output_type(path), gelu(acc(at(i, j)) + bias(j)));
    if (layout.out == Out::RowsApart)
      out.output_strides(with_batch(layout, {ldc, 1}, batch_stride));
    if (layout.out == Out::ColumnMajor)
      out.output_strides(with_batch(layout, {1, ldc}, batch_stride));
    if (path == Path::Ffma) {
      schedule_gemm(out, acc, A, B, i, j, k, default_gemm_tiling(0, 0, 0, 132));
      return;
    }
    MmaKind kind = path == Path::WarpMma ? MmaKind::BF16_m16n8k16 : MmaKind::BF16_wgmma_m64k16;
    MmaTiling t = default_mma_tiling(kind, 4096, 4096, 132);
    if (path != Path::WarpMma) {
      t.tma = path != Path::WarpgroupAsync;
      t.tile_stores = path == Path::WarpgroupAsync  ? TileStores::Direct
                      : path == Path::WarpgroupSums ? TileStores::SumsThroughShared
                                                    : TileStores::ThroughShared;
    }
    if (path == Path::SplitKLastBlock || path == Path::SplitKKernel) {
      t.block_m = t.block_n = t.warp_n = 128;
      t.split_k = 3;
      t.split_k_mode = path == Path::SplitKKernel ? SplitKMode::CombineKernel : SplitKMode::Deterministic;
      t.tile_stores = TileStores::Direct;
    }
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
  }

private:
  // `dims` after the batch's dimension (`first`: its extent, its variable,
  // its stride) where the layout has one.
  std::vector<Expr> with_batch(const Layout &layout, std::vector<Expr> dims, Expr first = Expr()) const {
    if (layout.batched)
      dims.insert(dims.begin(), first.defined() ? first : Expr(batch));
    return dims;
  }
};

/// Whether `path` runs a batch (the tensor-core recipe without split-K).
inline bool runs_batches(Path p) { return p != Path::Ffma && p != Path::SplitKLastBlock && p != Path::SplitKKernel; }

/// `m`'s `count` products of rows x columns (row-major), each stored
/// transposed.
inline Buffer transposed(const Buffer &m, int rows, int columns, int count = 1) {
  Buffer t(m.shape().size() == 3 ? std::vector<int>{count, columns, rows} : std::vector<int>{columns, rows}, m.type());
  const size_t product = size_t(rows) * columns;
  for (int z = 0; z < count; ++z)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c)
        t.set(z * product + size_t(c) * rows + r, m.get(z * product + size_t(r) * columns + c));
  return t;
}

/// Every layout but the dense one, the reference (batched or not).
inline std::vector<Layout> layouts_besides_dense(bool batched = false) {
  std::vector<Layout> all;
  for (bool a_km : {false, true})
    for (bool b_nk : {false, true})
      for (Out out : {Out::Dense, Out::RowsApart, Out::ColumnMajor})
        if (a_km || b_nk || out != Out::Dense)
          all.push_back(Layout{a_km, b_nk, out, batched});
  return all;
}

/// Elements from one row of `layout`'s output to the next (from one column
/// to the next, column-major): 5 past the row's (column's) length for a
/// view, which leaves elements between them.
inline int leading_dimension(const Layout &layout, int M, int N) {
  const int length = layout.out == Out::ColumnMajor ? M : N;
  return layout.out == Out::Dense ? length : length + 5;
}

/// The value the elements between a view's rows (columns) hold.
inline constexpr float kBetween = -7.0f;

/// Elements of one product of `layout`'s output, from its first to its
/// last.
inline int product_reach(const Layout &layout, int M, int N) {
  const int length = layout.out == Out::ColumnMajor ? M : N, runs = layout.out == Out::ColumnMajor ? N : M;
  return (runs - 1) * leading_dimension(layout, M, N) + length;
}

/// Elements from one product of `layout`'s output to the next: 3 past its
/// reach for a view.
inline int product_stride(const Layout &layout, int M, int N) {
  return layout.out == Out::Dense ? M * N : product_reach(layout, M, N) + 3;
}

/// `layout`'s output buffer at `count` products (one unless batched) of M x
/// N, every element kBetween: a view's ends at its last element.
inline Buffer output_buffer(Path path, const Layout &layout, int M, int N, int count = 1) {
  const int products = layout.batched ? count : 1;
  std::vector<int> shape = {(products - 1) * product_stride(layout, M, N) + product_reach(layout, M, N)};
  if (layout.out == Out::Dense)
    shape = layout.batched ? std::vector<int>{products, M, N} : std::vector<int>{M, N};
  Buffer out(shape, output_type(path));
  for (size_t e = 0; e < out.size(); ++e)
    out.set(e, kBetween);
  return out;
}

/// A (M x K) and B (K x N), `count` products of each where batched, stored
/// as `layout` says.
struct StoredInputs {
  Buffer a, b;
  StoredInputs(const Layout &layout, const Buffer &a_mk, const Buffer &b_kn, int M, int N, int K, int count = 1)
      : a(layout.a_km ? transposed(a_mk, M, K, count) : a_mk), b(layout.b_nk ? transposed(b_kn, K, N, count) : b_kn) {}
};

/// The arguments of `layout`'s GEMM (they refer to `inputs` and `bias`,
/// which must outlive them): the sizes, ldc for an output view, and a
/// batch's count and its products' stride.
inline Arguments layout_arguments(const Layout &layout, const StoredInputs &inputs, const Buffer &bias, int M, int N,
                                  int K, int count = 1) {
  Arguments args = {{"A", inputs.a}, {"B", inputs.b}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}};
  if (layout.out != Out::Dense)
    args.emplace("ldc", leading_dimension(layout, M, N));
  if (layout.batched)
    args.emplace("Batch", count);
  if (layout.batched && layout.out != Out::Dense)
    args.emplace("batch_stride", product_stride(layout, M, N));
  return args;
}

/// `got`, `layout`'s output, against `want`, the dense layouts' (M x N per
/// product).
struct Comparison {
  size_t differ = 0;          ///< elements without want's bits
  size_t nan = 0;             ///< elements NaN
  size_t between_written = 0; ///< elements between a view's rows (columns) or products no longer kBetween
};

inline Comparison compare_with_dense(const Layout &layout, const Buffer &got, const Buffer &want, int M, int N) {
  const bool column_major = layout.out == Out::ColumnMajor;
  const size_t ldc = size_t(leading_dimension(layout, M, N)), length = size_t(column_major ? M : N);
  const size_t stride = size_t(product_stride(layout, M, N)), reach = size_t(product_reach(layout, M, N));
  Comparison c;
  for (size_t e = 0; e < got.size(); ++e) {
    size_t z = e / stride, in_product = e % stride;
    float v = got.get(e);
    size_t run = in_product / ldc, along = in_product % ldc;
    if (in_product < reach && along < length) {
      size_t row = column_major ? along : run, column = column_major ? run : along;
      c.nan += std::isnan(v) ? 1 : 0;
      c.differ += v == want.get((z * size_t(M) + row) * size_t(N) + column) ? 0 : 1;
    } else {
      c.between_written += v == kBetween ? 0 : 1;
    }
  }
  return c;
}

} // namespace coalesce::layout_matrix
