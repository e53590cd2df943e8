#pragma once
// Checks the loop nest against GPU rules and the resource budget: block
// loops outside thread loops, one loop per GPU dimension, threads per
// block, shared memory per block, register arrays per thread, and with
// warpgroup MMAs, their accumulators against the registers a launch of
// `blocks_per_sm` blocks per SM leaves each thread.

#include "dsl/IR.h"
#include "scheduler/ResourceBudget.h"

namespace coalesce {

/// Throws a UserError naming the loop or buffer and the limit.
void check_gpu_limits(const Stmt &s, const ResourceBudget &budget, int blocks_per_sm = 0);

} // namespace coalesce
