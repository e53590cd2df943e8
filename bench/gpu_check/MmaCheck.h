#pragma once
// The tensor-core (warp MMA) GEMM + bias + GELU of one precision, checked on
// the GPU; see MmaCheck.cpp for what is compared with what.

#include "bench/common/Precisions.h"

namespace coalesce::gpu_check {

/// Every check of precision p (TF32, BF16 or F16); results go to Report.h.
/// Without `full`: the default kernels of both instruction families at
/// every shape but the largest, and each warpgroup variant (producer warps,
/// reallocation, persistent grids, clusters, padded copies) at its ragged
/// shapes and the K = 1 / K = 3 pair, for bf16 and tf32 (f16 shares bf16's
/// kernels but for the element type), clusters against cuBLAS too. With
/// `full`: every variant for every precision at every shape.
void check_mma(bench::Precision p, bool full);

/// One bf16 run at a ragged shape on buffers of exactly the right size, for
/// compute-sanitizer (and on sm_90a the bf16 and tf32 warpgroup MMAs); its
/// result goes to Report.h too.
void mma_sanitizer_case();
/// The default warpgroup tilings of a few large shapes (the narrower tiles
/// for the last wave, 128 x 64 at four stages, 64 x 64 split at six),
/// each run at a small ragged bf16 shape on exact-size buffers.
void default_tiles_sanitizer_case();
/// Producers that reallocate registers and leave before the staged output
/// tile's barriers, at a fixed shape of whole tiles (no guard around
/// either), on exact-size buffers.
void leaving_producers_fixed_whole_tiles_sanitizer_case();
/// The same with one instruction family: warp MMA, or warpgroup MMA (sm_90a),
/// and one precision (BF16 or TF32), its TMA copies issued by producer
/// warps where producer_warps > 0, from row-padded copies of the inputs
/// `padded` names,
/// in clusters of `cluster_blocks` sharing B's tiles where it is > 1.
void mma_sanitizer_case(bool warpgroup, bool tma = false, bench::Precision p = bench::Precision::BF16,
                        int producer_warps = 0, PaddedCopies padded = PaddedCopies::None, int producer_registers = 0,
                        int persistent_blocks = 0, int cluster_blocks = 0);

} // namespace coalesce::gpu_check
