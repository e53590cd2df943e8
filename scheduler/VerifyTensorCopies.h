#pragma once
// Defence in depth, after lowering: fails with an internal error if a TMA
// copy (TensorCopy) reads an input whose rows the TMA may not be able to
// describe without the kernel having checked that they can be: every copy
// must read a row-padded workspace (TmaCopies::padded_copy), or lie
// in the then-branch of a condition one of whose conjuncts is the input's
// tma_describable test. Where neither holds, the runtime would leave the
// tensor map zeroed and the kernel would copy through it. A copy of a
// workspace made only where the input's rows are ragged
// (PaddedCopy::WhereRowsAreRagged) lies in the else-branch of that test,
// for the same reason: elsewhere the workspace has no rows. And every TMA
// copy of f32 elements (tiles of a tf32 warpgroup MMA, which multiplies the
// bits it finds) must read a workspace rounded to tf32. A multicast copy
// (gpu_cluster) must start at the same place for every block of a
// cluster: its origin does not depend on the clustered block loop.

#include "scheduler/Environment.h"

namespace coalesce {

void verify_tensor_copies(const Stmt &s, const Environment &env);

} // namespace coalesce
