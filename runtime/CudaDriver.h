#pragma once
// The CUDA Driver API, loaded at run time.
//
// libcoalesce must load and work (CPU JIT, PTX generation) on machines that
// have no NVIDIA driver, CI included. So nothing links libcuda: the first use
// dlopen()s "libcuda.so.1" and resolves a small table of entry points with
// dlsym. <cuda.h> is included for its types and prototypes only (the
// prototypes give the function-pointer types; no symbol is referenced).
//
// Errors: a GPU that is required but absent is a GpuUnavailable (a UserError
// whose message says why); any other failing driver call is a UserError naming
// the call, the error (name and text) and what was being done.

#include <cuda.h>

#include <string>

#include "dsl/Error.h"

namespace coalesce::gpu {

/// A GPU was required but there is none usable; the message says why (no
/// driver, cuInit failed, no device, disabled by COALESCE_DISABLE_GPU).
class GpuUnavailable : public UserError {
public:
  using UserError::UserError;
};

/// The driver entry points Coalesce uses, listed once:
///   X(member, prototype in cuda.h, exported symbol dlsym resolves, older symbol or nullptr)
/// Member names deliberately differ from the cuda.h names, which are macros
/// (cuMemAlloc -> cuMemAlloc_v2, ...). The _v2 event symbols appeared in CUDA
/// 12.x; older drivers export only the plain names, hence the fallbacks.
#define COALESCE_FOR_EACH_DRIVER_ENTRY(X)                                                                              \
  X(init, cuInit, "cuInit", nullptr)                                                                                   \
  X(driver_get_version, cuDriverGetVersion, "cuDriverGetVersion", nullptr)                                             \
  X(get_error_name, cuGetErrorName, "cuGetErrorName", nullptr)                                                         \
  X(get_error_string, cuGetErrorString, "cuGetErrorString", nullptr)                                                   \
  X(device_get, cuDeviceGet, "cuDeviceGet", nullptr)                                                                   \
  X(device_get_count, cuDeviceGetCount, "cuDeviceGetCount", nullptr)                                                   \
  X(device_get_name, cuDeviceGetName, "cuDeviceGetName", nullptr)                                                      \
  X(device_get_attribute, cuDeviceGetAttribute, "cuDeviceGetAttribute", nullptr)                                       \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", nullptr)                                 \
  X(ctx_set_current, cuCtxSetCurrent, "cuCtxSetCurrent", nullptr)                                                      \
  X(ctx_synchronize, cuCtxSynchronize, "cuCtxSynchronize", nullptr)                                                    \
  X(mem_get_info, cuMemGetInfo, "cuMemGetInfo_v2", nullptr)                                                            \
  X(mem_alloc, cuMemAlloc, "cuMemAlloc_v2", nullptr)                                                                   \
  X(mem_free, cuMemFree, "cuMemFree_v2", nullptr)                                                                      \
  X(memcpy_htod, cuMemcpyHtoD, "cuMemcpyHtoD_v2", nullptr)                                                             \
  X(memcpy_dtoh, cuMemcpyDtoH, "cuMemcpyDtoH_v2", nullptr)                                                             \
  X(memset_d8, cuMemsetD8, "cuMemsetD8_v2", nullptr)                                                                   \
  X(module_load_data_ex, cuModuleLoadDataEx, "cuModuleLoadDataEx", nullptr)                                            \
  X(module_get_function, cuModuleGetFunction, "cuModuleGetFunction", nullptr)                                          \
  X(module_unload, cuModuleUnload, "cuModuleUnload", nullptr)                                                          \
  X(launch_kernel, cuLaunchKernel, "cuLaunchKernel", nullptr)                                                          \
  X(launch_kernel_ex, cuLaunchKernelEx, "cuLaunchKernelEx", nullptr)                                                   \
  X(func_set_attribute, cuFuncSetAttribute, "cuFuncSetAttribute", nullptr)                                             \
  X(func_get_attribute, cuFuncGetAttribute, "cuFuncGetAttribute", nullptr)                                             \
  X(stream_synchronize, cuStreamSynchronize, "cuStreamSynchronize", nullptr)                                           \
  X(event_create, cuEventCreate, "cuEventCreate", nullptr)                                                             \
  X(event_record, cuEventRecord, "cuEventRecord", nullptr)                                                             \
  X(event_synchronize, cuEventSynchronize, "cuEventSynchronize", nullptr)                                              \
  X(event_elapsed_time, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")                             \
  X(event_destroy, cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy")                                              \
  X(tensor_map_encode_tiled, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", nullptr)

/// One function pointer per entry of COALESCE_FOR_EACH_DRIVER_ENTRY.
struct DriverApi {
#define COALESCE_DRIVER_MEMBER(member, prototype, symbol, fallback) decltype(&::prototype) member;
  COALESCE_FOR_EACH_DRIVER_ENTRY(COALESCE_DRIVER_MEMBER)
#undef COALESCE_DRIVER_MEMBER
};

/// True only if libcuda.so.1 loads, cuInit succeeds and there is at least one
/// device. Otherwise false, and *why_not (if given) says why, e.g.
/// "no CUDA driver (libcuda.so.1 not found: ...)" or
/// "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
/// Setting the environment variable COALESCE_DISABLE_GPU=1 makes it false
/// (to exercise the no-GPU path on a GPU machine). Probes once; thread-safe.
bool gpu_available(std::string *why_not = nullptr);

/// The driver table, with cuInit done and a device present; throws
/// GpuUnavailable (with gpu_available's reason) otherwise.
const DriverApi &driver();

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code.
std::string cu_error_text(CUresult result);

/// Throws UserError "<what...> failed: <cu_error_text>" unless result is
/// CUDA_SUCCESS. The message is only built on failure.
template <typename... What> void cu_check(CUresult result, const What &...what) {
  if (result != CUDA_SUCCESS)
    user_error(what..., " failed: ", cu_error_text(result));
}

} // namespace coalesce::gpu
