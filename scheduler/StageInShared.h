#pragma once
// Lowering pass: for each stage_in_shared request, copies the tile of the
// input that a loop's body reads into a shared buffer once per iteration of
// that loop, then reads the tile from there:
//
//   for ko:                          allocate A_shared[64][8] f32 in shared
//     for ti, ki, ri:          ->    for ko:
//       ... A(bi*64 + ti*4 + ri,       for each thread: A_shared[r, c] = A(bi*64 + r, ko*8 + c)
//             ko*8 + ki) ...           barrier
//                                      for ti, ki, ri: ... A_shared[ti*4 + ri, ki] ...
//                                      barrier
//
// The copy is spread over the thread loops found inside the loop (each
// thread copies every T-th element, so consecutive threads read consecutive
// addresses). Accesses must be affine in the inner loops with constant
// coefficients, so that the tile has a constant size. This is the plain
// form, one buffer, copy then barrier; a loop whose request asks for two
// buffers or a pipeline (cp.async slots, the TMA's) is checked and planned
// alike, and left as a PipelinedStaging mark holding the loop:
// pipeline_staged_copies, next, builds its pipeline.

#include "scheduler/Environment.h"

namespace coalesce {

Stmt stage_inputs_in_shared(const Stmt &s, const Environment &env);
} // namespace coalesce
