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

/// The driver entry points Coalesce uses. Member names deliberately differ from
/// the cuda.h names, which are macros (cuMemAlloc -> cuMemAlloc_v2, ...); each
/// comment gives the exported symbol that dlsym resolves.
struct DriverApi {
  decltype(&::cuInit) init;                                   // cuInit
  decltype(&::cuDriverGetVersion) driver_get_version;         // cuDriverGetVersion
  decltype(&::cuGetErrorName) get_error_name;                 // cuGetErrorName
  decltype(&::cuGetErrorString) get_error_string;             // cuGetErrorString
  decltype(&::cuDeviceGet) device_get;                        // cuDeviceGet
  decltype(&::cuDeviceGetCount) device_get_count;             // cuDeviceGetCount
  decltype(&::cuDeviceGetName) device_get_name;               // cuDeviceGetName
  decltype(&::cuDeviceGetAttribute) device_get_attribute;     // cuDeviceGetAttribute
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain;   // cuDevicePrimaryCtxRetain
  decltype(&::cuCtxSetCurrent) ctx_set_current;               // cuCtxSetCurrent
  decltype(&::cuCtxSynchronize) ctx_synchronize;              // cuCtxSynchronize
  decltype(&::cuMemGetInfo) mem_get_info;                     // cuMemGetInfo_v2
  decltype(&::cuMemAlloc) mem_alloc;                          // cuMemAlloc_v2
  decltype(&::cuMemFree) mem_free;                            // cuMemFree_v2
  decltype(&::cuMemcpyHtoD) memcpy_htod;                      // cuMemcpyHtoD_v2
  decltype(&::cuMemcpyDtoH) memcpy_dtoh;                      // cuMemcpyDtoH_v2
  decltype(&::cuMemsetD8) memset_d8;                          // cuMemsetD8_v2
  decltype(&::cuModuleLoadDataEx) module_load_data_ex;        // cuModuleLoadDataEx
  decltype(&::cuModuleGetFunction) module_get_function;       // cuModuleGetFunction
  decltype(&::cuModuleUnload) module_unload;                  // cuModuleUnload
  decltype(&::cuLaunchKernel) launch_kernel;                  // cuLaunchKernel
  decltype(&::cuFuncSetAttribute) func_set_attribute;         // cuFuncSetAttribute
  decltype(&::cuFuncGetAttribute) func_get_attribute;         // cuFuncGetAttribute
  decltype(&::cuStreamSynchronize) stream_synchronize;        // cuStreamSynchronize
  decltype(&::cuEventCreate) event_create;                    // cuEventCreate
  decltype(&::cuEventRecord) event_record;                    // cuEventRecord
  decltype(&::cuEventSynchronize) event_synchronize;          // cuEventSynchronize
  decltype(&::cuEventElapsedTime) event_elapsed_time;         // cuEventElapsedTime_v2, else cuEventElapsedTime
  decltype(&::cuEventDestroy) event_destroy;                  // cuEventDestroy_v2, else cuEventDestroy
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
