#pragma once
// The TMA tensor maps a GPU kernel takes after its arguments
// (GpuKernel::tensor_maps), encoded on the host with the Driver API's
// cuTensorMapEncodeTiled from the input's device pointer and extents.

#include "dsl/Type.h"
#include "scheduler/LoweredFunc.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace coalesce {

/// Whether the TMA can read a row-major input of `type` with these extents
/// (and element strides, outermost first, for a view; empty: dense) at
/// `pointer`: every row starting a multiple of 16 bytes in (the kernel
/// tests the same and takes its cp.async copies otherwise), a 16-byte
/// aligned start, and no empty dimension. (scheduler/StageWithTma.h,
/// tma_describable.)
bool tma_can_describe(Type type, const std::vector<int64_t> &extents, CUdeviceptr pointer,
                      const std::vector<int64_t> &strides = {});

/// The tensor map for `param` over the input at `pointer` (row-major,
/// `extents` outermost first; dense, or a view with these element
/// `strides`): the box `param.box`, the 128-byte swizzle, 0 outside the
/// input. All zero where tma_can_describe is false: the kernel never reads
/// the map then. A pointer that is not 16-byte aligned, for an input the
/// kernel would read through the map, is a UserError naming the input.
CUtensorMap encode_tensor_map(const TensorMapParam &param, Type type, const std::vector<int64_t> &extents,
                              CUdeviceptr pointer, const std::vector<int64_t> &strides = {});

} // namespace coalesce
