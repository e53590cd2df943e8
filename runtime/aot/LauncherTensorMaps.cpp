#include "runtime/aot/LauncherTensorMaps.h"

#include "dsl/Error.h"
#include "runtime/aot/CppExpression.h"
#include "scheduler/StageWithTma.h"

#include <algorithm>
#include <sstream>

namespace coalesce {

std::string tensor_map_setup(const LauncherSpec &spec, size_t k, const std::string &params) {
  const GpuKernel &kernel = spec.program.kernels[k];
  if (kernel.tensor_maps.empty())
    return "";
  std::ostringstream out;
  std::string all = params;
  for (size_t m = 0; m < kernel.tensor_maps.size(); ++m) {
    const TensorMapParam &map = kernel.tensor_maps[m];
    auto arg = std::find_if(spec.program.args.begin(), spec.program.args.end(),
                            [&](const Argument &a) { return a.name == map.input && a.is_buffer(); });
    COALESCE_INTERNAL_ASSERT(arg != spec.program.args.end() && arg->extents.size() == 2 && map.box.size() == 2,
                             "tensor map of '", map.input, "' without a 2-D input argument");
    // As runtime/TensorMaps.cpp's data_type: an 8-bit float as its bits.
    std::string data_type = arg->type == BFloat(16)  ? "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
                            : arg->type == Float(16) ? "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
                            : arg->type.is_fp8()     ? "CU_TENSOR_MAP_DATA_TYPE_UINT8"
                                                     : "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    std::string v = str_cat("map", k, "_", m, "_");
    // The device pointer: the caller's buffer, or the launcher's part of
    // the workspace (a row-padded copy, TmaCopies::padded_copy).
    std::string pointer = map.input;
    if (arg->is_workspace) {
      size_t w = 0;
      for (auto a = spec.program.args.begin(); a != arg; ++a)
        w += a->is_workspace ? 1 : 0;
      pointer = str_cat("workspace", w, "_");
    }
    std::string rows = cpp_int(arg->extents[0]), columns = cpp_int(arg->extents[1]);
    int bytes = arg->type.bytes();
    out << "\n  // Kernel " << k << "'s tensor map of " << map.input << " (boxes of " << map.box[0] << " x "
        << map.box[1] << ", 128-byte swizzle, 0 outside " << map.input << ").\n"
        << "  struct TensorMap" << k << "_" << m << " { CUdeviceptr data = 0; int64_t rows = -1, columns = -1; "
        << "CUtensorMap map = {}; };\n"
        << "  static thread_local TensorMap" << k << "_" << m << " " << v << ";\n"
        << "  if (" << v << ".data != " << pointer << " || " << v << ".rows != " << rows << " || " << v
        << ".columns != " << columns << ") {\n"
        << "    " << v << " = {};\n"
        << "    if (" << rows << " > 0 && " << columns << " > 0 && "
        << cpp_int(tma_describable(arg->type, arg->extents)) << ") {\n"
        << "      if (" << pointer << " % 16 != 0)\n"
        << "        return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << map.input
        << " is not 16-byte aligned; the kernel copies it with the TMA, which needs 16-byte aligned data\");\n"
        << "      const cuuint64_t dims[2] = {cuuint64_t(" << columns << "), cuuint64_t(" << rows << ")};\n"
        << "      const cuuint64_t strides[1] = {cuuint64_t(" << columns << ") * " << bytes << "};\n"
        << "      const cuuint32_t box[2] = {" << map.box[1] << ", " << map.box[0] << "};\n"
        << "      const cuuint32_t element_strides[2] = {1, 1};\n"
        << "      status_ = cuTensorMapEncodeTiled(&" << v << ".map, " << data_type << ", 2, reinterpret_cast<void *>("
        << pointer << "), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, "
        << "CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
        << "      if (status_ != CUDA_SUCCESS) {\n"
        << "        " << v << " = {};\n"
        << "        return coalesce_launcher::fail(status_, \"cannot encode the tensor map of " << map.input
        << ": \" + coalesce_launcher::describe(status_));\n"
        << "      }\n"
        << "    }\n"
        << "    " << v << ".data = " << pointer << ";\n"
        << "    " << v << ".rows = " << rows << ";\n"
        << "    " << v << ".columns = " << columns << ";\n"
        << "  }\n";
    all += ", &" + v + ".map";
  }
  out << "  void *params" << k << "_[] = {" << all << "};\n";
  return out.str();
}

} // namespace coalesce
