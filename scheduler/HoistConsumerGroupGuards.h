#pragma once
// GPU lowering pass, after thread fusion (finish_gpu_program): in a
// persistent tile loop whose every statement is guarded by the test of the
// group of consumer warps that takes the tile (`warp / W == tile % 2`,
// alternate_consumer_warpgroups), the test once around them, its lets
// substituted, so that each group skips the other's tiles at once rather
// than test after test. A warpgroup's wait for its own MMAs may stand
// outside the test: a group without the tile has none in flight. Kernels
// without such a test are returned unchanged.

#include "dsl/IR.h"

namespace coalesce {

Stmt hoist_consumer_group_guards(const Stmt &kernel);

} // namespace coalesce
