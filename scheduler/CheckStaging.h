#pragma once
// The rules of a staged input's pipeline (stage_in_shared's TileCopies), in
// one place: each pipeline's own values (stages, producer warps and their
// registers), what they need of the stage (a serial loop to pipeline; the
// TMA feeds warpgroup MMAs only; tf32 through the TMA reads a rounded
// copy; multicast needs clusters), and that the inputs staged at one loop,
// which share its copies and barriers, name the same pipeline.

#include "scheduler/Environment.h"

namespace coalesce {

/// Before lowering; reads the schedules only.
void check_staging(const Environment &env);

} // namespace coalesce
