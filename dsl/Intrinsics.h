#pragma once
// Every intrinsic the IR can call, in one list. Passes and code generators
// compare enumerators, never names, so a misspelled intrinsic does not
// compile, and a new one shows up in every switch over Intrinsic.

#include <cstdint>

namespace coalesce {

/// How an intrinsic's result type follows from its arguments.
enum class IntrinsicResult : uint8_t {
  SameAsArg0, ///< the type of the first argument (math functions, async copies)
  Int32,      ///< i32 (GPU indices; async control, whose value is unused)
  Float32,    ///< f32
};

// X(enumerator, printed name, fewest arguments, most arguments, result rule).
// The printed name is what the IR printer writes (the golden loop nests
// hold it) and what LLVM values are named after.
#define COALESCE_FOR_EACH_INTRINSIC(X)                                                                                 \
  /* f32 math, from the algorithm (dsl/IROperator.h, dsl/Activations.cpp) */                                           \
  X(Exp, "exp", 1, 1, SameAsArg0)                                                                                      \
  X(Erf, "erf", 1, 1, SameAsArg0)                                                                                      \
  X(Erfc, "erfc", 1, 1, SameAsArg0)                                                                                    \
  X(Tanh, "tanh", 1, 1, SameAsArg0)                                                                                    \
  X(Sqrt, "sqrt", 1, 1, SameAsArg0)                                                                                    \
  X(Abs, "abs", 1, 1, SameAsArg0)                                                                                      \
  /* an f32 rounded to tf32, as the tf32 tensor-core instruction sees it */                                            \
  X(RoundToTf32, "round_to_tf32", 1, 1, Float32)                                                                       \
  /* an f32 truncated to tf32 (its top 19 bits), as the tensor cores read f32 bits */                                  \
  X(TruncateToTf32, "truncate_to_tf32", 1, 1, Float32)                                                                 \
  /* GPU indices, one per dimension (scheduler/FuseGpuThreadLoops.cpp) */                                              \
  X(ThreadIdX, "thread_id.x", 0, 0, Int32)                                                                             \
  X(ThreadIdY, "thread_id.y", 0, 0, Int32)                                                                             \
  X(ThreadIdZ, "thread_id.z", 0, 0, Int32)                                                                             \
  X(BlockIdX, "block_id.x", 0, 0, Int32)                                                                               \
  X(BlockIdY, "block_id.y", 0, 0, Int32)                                                                               \
  X(BlockIdZ, "block_id.z", 0, 0, Int32)                                                                               \
  /* asynchronous staging copies (scheduler/StageInShared.cpp): the value of */                                        \
  /* a Store; async_load(read[, in_bounds]), async_load_vector(read, count, */                                         \
  /* vector elements) */                                                                                               \
  X(AsyncLoad, "async_load", 1, 2, SameAsArg0)                                                                         \
  X(AsyncLoadVector, "async_load_vector", 3, 3, SameAsArg0)                                                            \
  /* the value of a Store: load_vector(read, count) copies `count` (a */                                               \
  /* constant) consecutive elements from read's element to the store's, */                                             \
  /* as one vector access, both aligned to the vector's bytes */                                                       \
  /* (scheduler/StageOutputTiles.cpp) */                                                                               \
  X(LoadVector, "load_vector", 2, 2, SameAsArg0)                                                                       \
  /* ... and their completion: wait for all; close a group; wait until at */                                           \
  /* most N (a constant) groups are in flight */                                                                       \
  X(AsyncWait, "async_wait", 0, 0, Int32)                                                                              \
  X(AsyncCommit, "async_commit", 0, 0, Int32)                                                                          \
  X(AsyncWaitGroup, "async_wait_group", 1, 1, Int32)                                                                   \
  /* a reduction split across blocks (scheduler/SplitReductionAcrossBlocks.cpp): */                                    \
  /* last_arrival(counters[tile], arrivals) counts this block's arrival at */                                          \
  /* its tile, called by every thread of the block at once; 1 for the block */                                         \
  /* that brings the count to `arrivals`, which also resets the count to 0, */                                         \
  /* else 0. Every store the block made before it is visible to that last */                                           \
  /* block after it. `arrivals` is the same for the whole block; with 1 the */                                         \
  /* block is its own last arrival and the counter is not touched. */                                                  \
  X(LastArrival, "last_arrival", 2, 2, Int32)                                                                          \
  /* atomic_add(value): only as the value of a Store, which then adds value */                                         \
  /* to the element atomically instead of overwriting it */                                                            \
  X(AtomicAdd, "atomic_add", 1, 1, SameAsArg0)                                                                         \
  /* the bits of two i32 values that differ: a 128-byte swizzled shared */                                             \
  /* tile's 16-byte column (scheduler/StageInShared.cpp) */                                                            \
  X(BitXor, "bit_xor", 2, 2, Int32)                                                                                    \
  /* shared memory written by this thread's copies becomes visible to the */                                           \
  /* tensor cores' reads (the async proxy) after the next barrier */                                                   \
  X(FenceProxyAsync, "fence_proxy_async", 0, 0, Int32)                                                                 \
  /* warpgroup MMAs (scheduler/TensorizeMma.cpp): order the accumulators' */                                           \
  /* registers before the first; close a group; wait until at most N */                                                \
  /* (a constant) groups are in flight */                                                                              \
  X(WgmmaFence, "wgmma_fence", 0, 0, Int32)                                                                            \
  X(WgmmaCommit, "wgmma_commit", 0, 0, Int32)                                                                          \
  X(WgmmaWait, "wgmma_wait", 1, 1, Int32)                                                                              \
  /* mbarriers of TMA copies (scheduler/StageWithTma.cpp); the first argument */                                       \
  /* is a Load of the barrier (its address, never read): init(bar, arrivals); */                                       \
  /* the fence that publishes inits to the async proxy; expect_tx(bar, bytes): */                                      \
  /* one arrival that announces the bytes of the copies it waits for; */                                               \
  /* wait(bar, parity): until the phase of that parity completes; inval(bar); */                                       \
  /* arrive(bar): one arrival (a consumer releasing a slot); arrive(bar, C): */                                        \
  /* one on the barrier at the same place in each of the C blocks of the */                                            \
  /* cluster (a slot multicast copies refill in all of them) */                                                        \
  X(MbarrierInit, "mbarrier_init", 2, 2, Int32)                                                                        \
  X(MbarrierInitFence, "mbarrier_init_fence", 0, 0, Int32)                                                             \
  X(MbarrierExpectTx, "mbarrier_expect_tx", 2, 2, Int32)                                                               \
  X(MbarrierWait, "mbarrier_wait", 2, 2, Int32)                                                                        \
  X(MbarrierInval, "mbarrier_inval", 1, 1, Int32)                                                                      \
  X(MbarrierArrive, "mbarrier_arrive", 1, 2, Int32)                                                                    \
  /* register reallocation (setmaxnreg, sm_90a; scheduler/StageWithTma.cpp): */                                        \
  /* the executing warpgroup's registers per thread become N (a constant */                                            \
  /* multiple of 8 from 24 to 256), given back to the block's pool or taken */                                         \
  /* from it; thread_exit: this thread leaves the kernel (the producer warps */                                        \
  /* after their copies). No-ops on the host, where no statement of those */                                           \
  /* threads follows. */                                                                                               \
  X(RegistersDecrease, "registers_decrease", 1, 1, Int32)                                                              \
  X(RegistersIncrease, "registers_increase", 1, 1, Int32)                                                              \
  X(ThreadExit, "thread_exit", 0, 0, Int32)                                                                            \
  /* named barriers of part of the block (two groups of consumer warps */                                              \
  /* taking turns): group_barrier_sync(id, threads) waits until `threads` */                                           \
  /* (constants) have arrived at barrier id, this warp's among them; */                                                \
  /* group_barrier_arrive(id, threads) arrives without waiting */                                                      \
  X(GroupBarrierSync, "group_barrier_sync", 2, 2, Int32)                                                               \
  X(GroupBarrierArrive, "group_barrier_arrive", 2, 2, Int32)                                                           \
  /* a barrier of every thread of every block of the cluster (gpu_cluster, */                                          \
  /* sm_90), releasing this thread's shared-memory accesses to the others: */                                          \
  /* a multicast pipeline's steps end in one. A no-op on the host. */                                                  \
  X(ClusterBarrier, "cluster_barrier", 0, 0, Int32)

enum class Intrinsic : uint8_t {
#define COALESCE_INTRINSIC_ENUM(name, printed, min_args, max_args, result) name,
  COALESCE_FOR_EACH_INTRINSIC(COALESCE_INTRINSIC_ENUM)
#undef COALESCE_INTRINSIC_ENUM
};

/// The printed name ("thread_id.x", "async_load", ...).
const char *intrinsic_name(Intrinsic intrinsic);
int intrinsic_min_args(Intrinsic intrinsic);
int intrinsic_max_args(Intrinsic intrinsic);
IntrinsicResult intrinsic_result(Intrinsic intrinsic);

/// A pure f32 function of one value, which each target maps to its math
/// library (libm or libdevice).
bool is_math_intrinsic(Intrinsic intrinsic);

/// round_to_tf32 or truncate_to_tf32: an f32 operand as a tf32 MMA sees it.
inline bool is_tf32_conversion(Intrinsic intrinsic) {
  return intrinsic == Intrinsic::RoundToTf32 || intrinsic == Intrinsic::TruncateToTf32;
}

/// thread_id.{x,y,z} and block_id.{x,y,z} for GPU dimension `dim` (0 to 2).
Intrinsic thread_id_intrinsic(int dim);
Intrinsic block_id_intrinsic(int dim);

} // namespace coalesce
