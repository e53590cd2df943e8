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

} // namespace coalesce::testing
