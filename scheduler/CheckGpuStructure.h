#pragma once
// Check pass, on every target: a nest with GPU loops must have the structure
// the GPU path can turn into kernels (block loops outermost, thread loops of
// a kernel agreeing on each dimension, register arrays indexed alike by
// every thread loop that touches them, no store outside the thread loops,
// no heap storage inside a kernel). The rules live in the GPU path's thread
// fusion, which raises them; running that same pass here, on the serial nest
// the GPU path starts from, makes a CPU run reject exactly the schedules the
// GPU path rejects, with the same message, instead of running them.

#include "dsl/IR.h"

#include <string>

namespace coalesce {

/// Raises the UserError the GPU path would raise for nest `s` (output
/// `name`), if it has GPU loops; a nest without any is a host nest.
void check_gpu_structure(const Stmt &s, const std::string &name);

} // namespace coalesce
