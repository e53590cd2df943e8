#pragma once
// The compile cache (CompileCache.h) applied to PTX: the key is built from
// the GPU loop nest before thread fusion (GpuNest), so a hit costs the front
// end and the serial passes (under a millisecond for a GEMM) and a file
// read, and skips the finishing passes, LLVM and the NVPTX backend.

#include "codegen/CompileCache.h"
#include "codegen/GpuTarget.h"
#include "scheduler/LoweredFunc.h"

#include <functional>
#include <string>

namespace coalesce {

/// Everything that determines the PTX of `nest` for `target`, as text: the
/// compiler's version (compiler_version()), LLVM's, the target's sm and PTX
/// version, libdevice's identity, the arguments with their types and
/// extents (and a view's strides), the launch-bound request, and the serial loop nest as printed,
/// followed by each expression's type (the printer leaves some implicit)
/// and each float constant's exact bits.
std::string ptx_cache_key(const GpuNest &nest, const GpuTarget &target);

/// The PTX for `nest` from `cache` if it holds it, else `compile()`'s,
/// stored in the cache. `hit` (if given) says which.
/// `variant` names a program derived from the nest's at launch (a
/// specialization, SpecializeSizes.h): it is part of the key.
std::string cached_ptx(const GpuNest &nest, const GpuTarget &target, const CompileCache &cache,
                       const std::function<std::string()> &compile, bool *hit = nullptr,
                       const std::string &variant = "");

/// "coalesce <git commit> (<library file size>-<mtime>)": changes whenever
/// libcoalesce is rebuilt, so a cache never outlives the compiler that
/// filled it, even with uncommitted changes.
const std::string &compiler_version();

} // namespace coalesce
