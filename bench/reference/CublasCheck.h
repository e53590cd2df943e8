#pragma once
// A cuBLAS or CUDA runtime status as the reference reports it: a UserError
// naming the call and the status (CublasReference.cpp, CublasFp8.cpp).

#include "dsl/Error.h"

#include <cublas_api.h>
#include <cuda_runtime.h>

namespace coalesce::reference::detail {

inline void check(cublasStatus_t status, const char *call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    user_error(call, " failed: ", cublasGetStatusName(status), " (", cublasGetStatusString(status), ")");
}

inline void check(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    user_error(call, " failed: ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

} // namespace coalesce::reference::detail
