#pragma once
// Stands in for the CUDA driver in the launcher checks (fake_driver_*.cpp):
// it defines the few cu* functions a generated launcher calls and records
// what it asks for. Include it once per program, after the launchers'
// headers.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fake {

int scalar_count = 2; // the launcher's run-time sizes, after its 4 buffers
CUcontext current = reinterpret_cast<CUcontext>(uintptr_t(0x100));
CUresult load_result = CUDA_SUCCESS;
std::atomic<int> loads{0};
std::atomic<int> launches{0};
std::string ptx;                 // the PTX of the last PTX load
bool refuse_cubin = false;       // as a driver for another GPU: no cubin loads
std::atomic<int> cubin_loads{0}; // the loads given a cubin (an ELF image)
std::string loaded_from;         // "cubin" or "ptx": the last successful load's image
std::vector<std::string> kernel_names;
std::mutex mutex; // guards last

struct Launch {
  CUfunction kernel = nullptr;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned shared = 0;
  CUstream stream = nullptr;
  CUdeviceptr buffers[4] = {0, 0, 0, 0};
  int32_t scalars[3] = {0, 0, 0};
} last;

const CUlibrary kLibrary = reinterpret_cast<CUlibrary>(uintptr_t(0x200));
const CUkernel kKernel = reinterpret_cast<CUkernel>(uintptr_t(0x300));

} // namespace fake

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *context) {
  *context = fake::current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *options,
                                   void **values, unsigned int option_count,
                                   CUlibraryOption *, void **, unsigned int) {
  ++fake::loads;
  std::this_thread::yield(); // widen the window for a racing second load
  bool cubin = std::memcmp(code, "\x7f" "ELF", 4) == 0;
  fake::cubin_loads += cubin;
  if (cubin && fake::refuse_cubin)
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (fake::load_result != CUDA_SUCCESS) {
    for (unsigned o = 0; o < option_count; ++o)
      if (options[o] == CU_JIT_ERROR_LOG_BUFFER)
        std::strcpy(static_cast<char *>(values[o]), "ptxas fatal: the fake JIT log");
    return fake::load_result;
  }
  if (!cubin)
    fake::ptx = static_cast<const char *>(code);
  fake::loaded_from = cubin ? "cubin" : "ptx";
  *library = fake::kLibrary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name) {
  if (library != fake::kLibrary)
    return CUDA_ERROR_INVALID_HANDLE;
  fake::kernel_names.push_back(name);
  *kernel = fake::kKernel;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuLaunchKernel(CUfunction kernel, unsigned int grid_x, unsigned int grid_y,
                                unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                unsigned int block_z, unsigned int shared, CUstream stream,
                                void **params, void **) {
  ++fake::launches;
  fake::Launch launch;
  launch.kernel = kernel;
  launch.grid[0] = grid_x, launch.grid[1] = grid_y, launch.grid[2] = grid_z;
  launch.block[0] = block_x, launch.block[1] = block_y, launch.block[2] = block_z;
  launch.shared = shared;
  launch.stream = stream;
  for (int b = 0; b < 4; ++b)
    launch.buffers[b] = *static_cast<CUdeviceptr *>(params[b]);
  for (int s = 0; s < fake::scalar_count; ++s)
    launch.scalars[s] = *static_cast<int32_t *>(params[4 + s]);
  std::lock_guard<std::mutex> lock(fake::mutex);
  fake::last = launch;
  return CUDA_SUCCESS;
}

// What a launcher for sm_90a (dynamic shared memory, the TMA's tensor maps)
// calls besides: accepted, the tensor maps counted.
namespace fake {
std::atomic<int> tensor_maps{0};
} // namespace fake

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute, int, CUkernel, CUdevice) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                        const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                        CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                        CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof(*map));
  ++fake::tensor_maps;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult, const char **name) {
  *name = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult, const char **text) {
  *text = "a fake driver error";
  return CUDA_SUCCESS;
}

