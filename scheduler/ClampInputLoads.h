#pragma once
// Lowering pass: turns every read of an input into a load whose coordinates
// are clamped into the input's extents. Reads past the edge happen only for
// points outside the output (tiles that overhang a ragged edge, staged
// tiles); their values are never stored, and the clamp keeps every address
// inside the buffer.

#include "dsl/IR.h"

namespace coalesce {

Stmt clamp_input_loads(const Stmt &s);

} // namespace coalesce
