#pragma once
// Lowering pass (the output's gpu_tile_stores(TileStores::ThroughShared),
// after partition_full_tiles): the statement a block's threads run once per
// tile that stores the output's whole tile without guards (the full-tile
// copy of the epilogue) writes the tile into shared memory instead, and the
// block copies it out, in vectors of 16 bytes where the output's rows allow
// them and element by element where they do not:
//
//   for warp in gpu_thread.y(0, 8):          allocate out_tile[128][264] bf16 in shared
//     for lane in gpu_thread.x(0, 32):       for warp ...: for lane ...: ... out_tile[ii, jj] = v
//       ... out[bi*128 + ii, bj*256 + jj] = v   barrier
//                                       ->   if N % 8 == 0:
//                                              for warp ...: for lane ...: for e in unrolled(0, 16):
//                                                let flat = e*256 + warp*32 + lane
//                                                out[bi*128 + flat/32, bj*256 + flat % 32*8]
//                                                  = load_vector(out_tile[flat/32, flat % 32*8], 8)
//                                            else:
//                                              for warp ...: for lane ...: for e in serial(0, 128):
//                                                let flat = e*256 + warp*32 + lane
//                                                out[bi*128 + flat/256, bj*256 + flat % 256] = out_tile[flat/256, flat
//                                                % 256]
//                                            barrier
//
// On partition_full_tiles's `if <whole tile inside>: <full-tile copy>
// else: <guarded copy>`, every block takes the full-tile copy's statements,
// staged, and the copy stores only what lies inside the output (a row's
// vectors start at 16-byte multiples of an output whose rows are 16-byte
// multiples, so each is wholly inside or wholly outside); the guarded copy
// is dropped, so the epilogue's expression is compiled once:
//
//   <the full-tile copy writing out_tile>; barrier
//   if N % 8 == 0: ... if bi*128 + flat/32 < M && bj*256 + flat % 32*8 < N: out[...] = load_vector(...)
//   else:          ... if bi*128 + flat/256 < M && bj*256 + flat % 256 < N: out[...] = out_tile[...]
//   barrier
//
// The elements past the output's edge are computed and dropped: every
// input's load is clamped inside it (clamp_input_loads), so computing them
// reads nothing outside; what it saves is the guarded copy's element-by-
// element chains on the blocks of the ragged edge, which run in the last
// wave, and a second copy of the epilogue's code (half the kernel's
// instructions for a GELU, and half its compile time).
//
// Why: an MMA's accumulator fragments give each thread two adjacent
// columns in each of eight rows, so a warp's direct stores write 4-byte
// pieces of 32-byte sectors, a quarter of each; the copy's stores fill
// whole sectors (docs/performance.md measures it). The element copy, for
// rows that are not 16-byte multiples, still stores consecutive elements
// from consecutive threads.
//
// Which statements: those storing to the output only, at one Store without
// guards, whose indices' ranges (scheduler/UniformRanges.h) span a box of
// R x C elements that the statement's loops visit R x C times (a block's
// tile of a pure definition visits each element once, so the box is
// exactly its tile), with C times the element's bytes a multiple of 16
// (R times, for a column-major output).
// The box is the store's last two indices; indices before them (a batch's,
// out[b, i, j]) must each be one point in the statement, a block's, and
// the copy stores at them.
// The vectors need the output's rows and the tile's first column at 16-byte
// multiples, which the run-time condition checks. A column-major output
// (output_strides({1, ldc})) is contiguous down its columns: the copy-out
// runs down the tile's columns instead, consecutive threads copying
// consecutive runs of a column, each gathering its 8 elements from the
// tile's rows into registers and storing them as one vector (M, ldc and the
// tile's first row whole vectors; element by element otherwise). The shared tile's rows
// are padded by 16 bytes, so that the fragment layout's stores (eight rows
// by four columns per warp) fall in different banks. The last barrier keeps
// a persistent block's next tile from overwriting the tile before every
// warp has copied it out. The tile is allocated once, inside the innermost
// block loop: every staged statement of the kernel (a persistent tile loop
// unswitched on the TMA condition has two epilogues) shares it.

// TileStores::SumsThroughShared stages what the epilogue reads rather than
// what it writes: the store `out[..] = f(acc[r], g[r'])` becomes a store
// of each Func the output's definition reads (as the statement read it:
// one load at one index) into that Func's tile (`acc_tile`, its own type,
// rows padded by 32 bytes so that the fragments' pairs of 4-byte sums
// fall in different banks per half-warp), and each vector step of the copy
// computes the output's definition at its point (DefinitionAtPoint.h),
// lane by lane into registers, then stores the vector:
//
//   for e in serial(0, 16):                  (LoopRole::EpilogueSteps: kept a loop)
//     let flat = e*256 + warp*32 + lane
//     allocate out_tile.vector[8] in register
//     for out_tile_lane in unrolled(0, 8):
//       out_tile.vector[l] = f(acc_tile[flat/32, flat % 32*8 + l], ...)
//     out[bi*128 + flat/32, bj*256 + flat % 32*8] = load_vector(out_tile.vector[0], 8)
//
// The element copy computes one element per step. So the epilogue's code
// appears once per vector instead of once per element a thread holds. Its
// value is the output's definition, the same expression the direct store
// computes: the same bits. The point is always inside the output (the
// vectors wholly inside are the only ones computed), so no input read in
// a step needs the clamps the unguarded copy's did.
//
// Where the block's threads are a multiple of the runs in a row, a
// thread's run stays in one column from step to step (the column is
// written from the thread's index alone), and each input read whose
// coordinates then do not depend on the step (a bias along the row) is
// read once, before the steps, into a register array per read
// (`out_tile.read<n>[lane]`; `out_tile.element_read<n>[0]` in the element
// copy), its coordinates clamped into the input: the thread's run may lie
// past the output's edge, and where it does not the clamp changes
// nothing. Read in each step, right before its use, the bias's latency was
// most of what the copy-out waited for (docs/performance.md).

#include "scheduler/Environment.h"

namespace coalesce {

/// Does nothing unless the output's schedule asks for it.
Stmt stage_output_tiles(const Stmt &s, const Environment &env);

} // namespace coalesce
