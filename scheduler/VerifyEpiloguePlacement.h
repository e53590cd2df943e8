#pragma once
// Defence in depth, after the schedule-time checks: fails with an internal
// error if any Func's store sits inside a reduction loop of another Func.
// An epilogue there would act on partial sums, whatever the front end let
// through.

#include "scheduler/Environment.h"

namespace coalesce {

void verify_epilogue_placement(const Stmt &s, const Environment &env);

} // namespace coalesce
