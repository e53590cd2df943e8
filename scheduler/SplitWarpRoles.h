#pragma once
// Part of the GPU step (fuse_gpu_thread_loops): a kernel with producer warps
// (LoopRole::ProducerWarps) runs two programs, one per role. After thread
// fusion, each statement of a thread loop is guarded by its role (the
// producer warps' threads are those at or past `others` in dimension
// `dim`). Between two block-wide barriers no thread waits for another, so
// each thread may run only its own role's statements of that stretch, in
// their order: a stretch that has statements of both roles becomes
//
//   if <producer thread>:  <the stretch, the producer's statements only>
//   else:                  <the stretch, the other threads' statements only>
//
// Each role then runs its loops without a branch around the other role's
// work inside them: ptxas keeps a warpgroup MMA pipelined only where no
// path around it reaches the accumulators (C7515). For the same
// reason a part with barriers in which the producer warps have nothing to
// do (the cp.async pipeline the kernel takes where the TMA cannot describe
// an input) is the other threads' alone, and so are its barriers:
//
//   if <not a producer thread>:  <the part, its barriers counting only them>
//
// except where the part calls last_arrival, whose own barriers are the
// whole block's: the producer warps then pass through it with the others.
// A statement whose barriers are all the others' own once split inside (a
// persistent block's tile loop, its staged output tile between two such
// barriers) is a stretch itself: each role runs the loop on its own.
//
// With register reallocation the producer warps leave the kernel
// (thread_exit) after their program: from there on the block is the other
// threads, and every later barrier counts them alone, whichever pass
// placed it (the pipeline's teardown, a staged output tile's). A barrier
// of the whole block that a loop's next iteration would reach after the
// exit, or last_arrival's after it, stays an internal error.
// So does a barrier counting the others alone where the producer warps,
// still in the kernel, would reach it (outside the others' branch).

#include "dsl/IR.h"

namespace coalesce {

/// The guard of the producer warps' statements, and of the others'.
Expr on_producer_warps(int dim, int others);
Expr on_other_warps(int dim, int others);

/// `body` with every barrier-free stretch that holds statements of both
/// roles split into one program per role, and every part with barriers but
/// no statement of the producer warps run by the others alone, its
/// barriers theirs (Barrier::threads = `other_threads`).
Stmt split_warp_roles(const Stmt &body, int dim, int others, int other_threads);
} // namespace coalesce
