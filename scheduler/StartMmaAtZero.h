#pragma once
// A sum reduced by warpgroup MMAs starts from 0: a Func whose reduction
// runs on wgmma and whose initial value is not 0 (an algorithm's
// acc(i, j) = bias(j), or fold_bias_into_init) starts from 0 instead, and
// its consumers add the initial value to what they read. ptxas serializes
// the MMAs of a kernel whose accumulators start from loaded values (C7511,
// C7514: 18 of 4,080 random warpgroup schedules, all bias-initialized), so
// the value is added after the reduction, once per element: the same sum in
// another order, which the MMA's allow_reassociation already accepts.

#include "scheduler/Environment.h"

namespace coalesce {

void start_mma_accumulators_at_zero(Environment &env);

} // namespace coalesce
