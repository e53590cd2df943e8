#pragma once
// A tile computed inside a GPU kernel is read by the threads that wrote it.

#include "dsl/IR.h"
#include "scheduler/Environment.h"

namespace coalesce {

/// On the serial nest, before thread fusion: every access to a Func's buffer
/// allocated inside a kernel indexes each dimension alike: by a thread loop
/// of the same GPU dimension everywhere, or by no thread loop anywhere. On
/// the GPU a thread keeps only its own part of a register tile (and reads a
/// shared tile with no barrier after its producer), so an epilogue whose
/// thread reads a point another thread computed would read garbage there
/// while the serial (CPU) run is right. Throws a UserError naming the
/// buffer, the dimension and both loops.
void check_thread_ownership(const Stmt &s, const Environment &env);

} // namespace coalesce
