#include "runtime/TensorMaps.h"

#include "dsl/Error.h"
#include "runtime/CudaDriver.h"

#include <cstring>

namespace coalesce {

namespace {

bool rows_describable(Type type, const std::vector<int64_t> &extents, const std::vector<int64_t> &strides) {
  if (extents.empty())
    return false;
  for (int64_t extent : extents)
    if (extent <= 0)
      return false;
  if (strides.empty())
    return extents.back() * type.bytes() % 16 == 0;
  for (size_t d = 0; d + 1 < strides.size(); ++d)
    if (strides[d] * type.bytes() % 16 != 0)
      return false;
  return true;
}

CUtensorMapDataType data_type(Type type) {
  if (type == BFloat(16))
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  if (type == Float(16))
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if (type == Float(32))
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  // The TMA moves bytes: an 8-bit float is copied as its bits.
  if (type.is_fp8())
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  user_error("the TMA copies no ", type, " input");
}

} // namespace

bool tma_can_describe(Type type, const std::vector<int64_t> &extents, CUdeviceptr pointer,
                      const std::vector<int64_t> &strides) {
  return rows_describable(type, extents, strides) && pointer % 16 == 0;
}

CUtensorMap encode_tensor_map(const TensorMapParam &param, Type type, const std::vector<int64_t> &extents,
                              CUdeviceptr pointer, const std::vector<int64_t> &strides) {
  CUtensorMap map;
  std::memset(&map, 0, sizeof map);
  if (!rows_describable(type, extents, strides))
    return map;
  if (pointer % 16 != 0)
    user_error("input '", param.input, "' starts at a device address that is not a multiple of 16 bytes; its "
               "kernel copies it with the TMA, which needs 16-byte aligned data: pass an aligned pointer");
  COALESCE_INTERNAL_ASSERT(param.box.size() == extents.size() && extents.size() <= 5, "tensor map of '",
                           param.input, "' with a box of another rank");
  size_t rank = extents.size();
  // The driver's order is innermost first; strides for every dimension but
  // the innermost, in bytes.
  cuuint64_t dims[5], byte_strides[4];
  const bool view = !strides.empty();
  cuuint32_t box[5], element_strides[5];
  int64_t stride = type.bytes();
  for (size_t d = 0; d < rank; ++d) {
    size_t from = rank - 1 - d;
    dims[d] = static_cast<cuuint64_t>(extents[from]);
    box[d] = static_cast<cuuint32_t>(param.box[from]);
    element_strides[d] = 1;
    // A view's strides are its own; a dense input's, the extents inside.
    if (d > 0)
      byte_strides[d - 1] = static_cast<cuuint64_t>(view ? strides[from] * type.bytes() : stride);
    stride *= extents[from];
  }
  gpu::cu_check(gpu::driver().tensor_map_encode_tiled(&map, data_type(type), static_cast<cuuint32_t>(rank),
                                                      reinterpret_cast<void *>(static_cast<uintptr_t>(pointer)), dims,
                                                      byte_strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                "cuTensorMapEncodeTiled (the tensor map of '", param.input, "')");
  return map;
}

} // namespace coalesce
