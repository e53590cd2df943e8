#pragma once
// The fused GEMM the output-layout tests run on every path: out = gelu(A B +
// bias), out dense, a view with rows ldc apart (output_strides({ldc, 1})),
// or column-major with columns ldc apart (output_strides({1, ldc})), on
// FFMA, warp MMA, warpgroup MMA (cp.async and direct stores; TMA with tiles
// or sums through shared memory) and split-K (the last block's combine, the
// combine kernel).

#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

namespace coalesce::testing {

/// How out is stored: dense (row-major, rows N apart), rows ldc apart, or
/// column-major with columns ldc apart (out(i, j) at i + j * ldc).
enum class OutputLayout { Dense, RowsApart, ColumnMajor };

enum class Path { Ffma, WarpMma, WarpgroupAsync, WarpgroupTma, WarpgroupSums, SplitKLastBlock, SplitKKernel };

inline const char *path_name(Path p) {
  switch (p) {
  case Path::Ffma: return "FFMA";
  case Path::WarpMma: return "warp MMA";
  case Path::WarpgroupAsync: return "warpgroup MMA, cp.async, direct stores";
  case Path::WarpgroupTma: return "warpgroup MMA, TMA, tiles through shared memory";
  case Path::WarpgroupSums: return "warpgroup MMA, TMA, the sums through shared memory";
  case Path::SplitKLastBlock: return "warpgroup MMA split 3 ways, the last block's combine";
  case Path::SplitKKernel: return "warpgroup MMA split 3 ways, the combine kernel";
  }
  return "";
}

inline Type input_type(Path p) { return p == Path::Ffma ? Float(32) : BFloat(16); }
inline Type output_type(Path p) { return p == Path::Ffma ? Float(32) : BFloat(16); }

/// out = gelu(A B + bias), stored as `layout` says.
struct LayoutGemm {
  Param M{"M"}, N{"N"}, K{"K"}, ldc{"ldc"};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, B, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};

  LayoutGemm(Path path, OutputLayout layout) : A("A", input_type(path), {M, K}), B("B", input_type(path), {K, N}) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = cast(output_type(path), gelu(acc(i, j) + bias(j)));
    if (layout == OutputLayout::RowsApart)
      out.output_strides({ldc, 1});
    if (layout == OutputLayout::ColumnMajor)
      out.output_strides({1, ldc});
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
