#pragma once
// The GPU step of lowering, and the only one that differs from the host:
// each outermost nest of gpu_block loops becomes a kernel. Block loops become
// block indices; within a block, the separate thread loops (a copy into
// shared memory, the reduction, the epilogue) fuse into one body that every
// thread runs, with the barriers between them kept at the seams (Halide's
// FuseGPUThreadLoops is the model). Register arrays lose the dimensions
// indexed by thread loops: each thread keeps only its own part.
//
//   for bi in gpu_block:                    kernel, grid = (ceil(N/64), ceil(M/64)):
//     allocate acc[16][16][4][4] register     let bi = block_id.y
//     for ti in gpu_thread: ... acc[ti]..  ->  allocate acc[4][4] register
//     barrier                                 let ti = thread_id.y; ... acc[...] ...
//     for ti in gpu_thread: ... acc[ti]..     barrier
//                                             let ti = thread_id.y; ... acc[...] ...

#include "scheduler/LoweredFunc.h"

namespace coalesce {

/// `name` names the kernels (name, name_1, ...).
std::vector<GpuKernel> fuse_gpu_thread_loops(const Stmt &s, const std::string &name);

} // namespace coalesce
