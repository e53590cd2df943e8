#include "runtime/aot/LauncherTensorMaps.h"

#include "dsl/Error.h"
#include "dsl/Input.h"
#include "runtime/aot/CppExpression.h"
#include "scheduler/TmaInputs.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

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
    const size_t rank = arg == spec.program.args.end() ? 0 : arg->extents.size();
    COALESCE_INTERNAL_ASSERT(rank >= 2 && rank <= 5 && map.box.size() == rank, "tensor map of '", map.input,
                             "' without an input argument of its box's rank (2 to 5)");
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
    // The extents outermost first (a batch's, then the rows, the columns);
    // the driver lists them innermost first.
    std::vector<std::string> extents;
    for (const Expr &e : arg->extents)
      extents.push_back(cpp_int(e));
    const std::string columns = extents[rank - 1];
    // What the map is encoded from, kept to tell when to encode it again:
    // the extents, and a view's outer strides.
    std::vector<std::string> key = extents;
    for (size_t d = 0; d + 1 < arg->strides.size(); ++d)
      key.push_back(cpp_int(arg->strides[d]));
    int bytes = arg->type.bytes();
    std::string box_text, changed = str_cat(v, ".data != ", pointer), positive, dims, strides, box, ones, keep;
    std::string stride = str_cat("cuuint64_t(", columns, ") * ", bytes);
    // A view's rows lie its strides apart (dsl/Input.h); a dense input's,
    // the extents inside them.
    const bool view = !arg->strides.empty();
    for (size_t d = 0; d < rank; ++d) {
      const std::string &extent = extents[rank - 1 - d];
      const char *comma = d ? ", " : "";
      box_text += str_cat(d ? " x " : "", map.box[d]);
      positive += str_cat(d ? " && " : "", extents[d], " > 0");
      dims += str_cat(comma, "cuuint64_t(", extent, ")");
      box += str_cat(comma, map.box[rank - 1 - d]);
      ones += str_cat(comma, 1);
      if (d > 0) {
        strides += str_cat(d > 1 ? ", " : "",
                           view ? str_cat("cuuint64_t(", cpp_int(arg->strides[rank - 1 - d]), ") * ", bytes) : stride);
        stride = str_cat(stride, " * cuuint64_t(", extent, ")");
      }
    }
    for (size_t n = 0; n < key.size(); ++n) {
      changed += str_cat(" || ", v, ".extents[", n, "] != ", key[n]);
      keep += str_cat("    ", v, ".extents[", n, "] = ", key[n], ";\n");
    }
    out << "\n  // Kernel " << k << "'s tensor map of " << map.input << " (boxes of " << box_text
        << ", 128-byte swizzle, 0 outside " << map.input << ").\n"
        << "  struct TensorMap" << k << "_" << m << " { CUdeviceptr data = 0; int64_t extents[" << key.size()
        << "] = {";
    for (size_t n = 0; n < key.size(); ++n)
      out << (n ? ", " : "") << -1;
    out << "}; CUtensorMap map = {}; };\n"
        << "  static thread_local TensorMap" << k << "_" << m << " " << v << ";\n"
        << "  if (" << changed << ") {\n"
        << "    " << v << " = {};\n"
        << "    if (" << positive << " && "
        << cpp_int(tma_describable(InputContents{arg->name, arg->type, arg->extents, arg->strides})) << ") {\n"
        << "      if (" << pointer << " % 16 != 0)\n"
        << "        return coalesce_launcher::fail(CUDA_ERROR_INVALID_VALUE, \"" << map.input
        << " is not 16-byte aligned; the kernel copies it with the TMA, which needs 16-byte aligned data\");\n"
        << "      const cuuint64_t dims[" << rank << "] = {" << dims << "};\n"
        << "      const cuuint64_t strides[" << rank - 1 << "] = {" << strides << "};\n"
        << "      const cuuint32_t box[" << rank << "] = {" << box << "};\n"
        << "      const cuuint32_t element_strides[" << rank << "] = {" << ones << "};\n"
        << "      status_ = cuTensorMapEncodeTiled(&" << v << ".map, " << data_type << ", " << rank
        << ", reinterpret_cast<void *>(" << pointer << "), dims, strides, box, element_strides, "
        << "CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "
        << "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
        << "      if (status_ != CUDA_SUCCESS) {\n"
        << "        " << v << " = {};\n"
        << "        return coalesce_launcher::fail(status_, \"cannot encode the tensor map of " << map.input
        << ": \" + coalesce_launcher::describe(status_));\n"
        << "      }\n"
        << "    }\n"
        << "    " << v << ".data = " << pointer << ";\n"
        << keep << "  }\n";
    all += ", &" + v + ".map";
  }
  out << "  void *params" << k << "_[] = {" << all << "};\n";
  return out.str();
}

} // namespace coalesce
