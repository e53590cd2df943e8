#pragma once
// The part of a generated launcher that encodes the TMA tensor maps a
// kernel takes after its arguments (GpuKernel::tensor_maps).

#include "runtime/aot/LauncherSource.h"

#include <cstddef>
#include <string>

namespace coalesce {

/// The TMA tensor maps kernel `k` takes after the arguments
/// (GpuKernel::tensor_maps), encoded for this call's pointers and sizes and
/// kept while they stay the same; then its parameter array `paramsK_`.
/// Where an input's rows are not 16-byte multiples, the kernel takes its
/// cp.async copies and never reads the map, which stays zeroed.
std::string tensor_map_setup(const LauncherSpec &spec, size_t k, const std::string &params);

} // namespace coalesce
