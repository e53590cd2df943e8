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

int buffer_count = 4; // the kernel's buffers, first among its parameters
int scalar_count = 2; // the launcher's run-time sizes, after its buffers
int map_count = 0;    // the tensor maps the kernel takes after them
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
  CUdeviceptr buffers[8] = {};
  int32_t scalars[8] = {};
  uint64_t maps[4] = {}; // the tag cuTensorMapEncodeTiled left in each map passed (0: a zeroed map)
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
  for (int b = 0; b < fake::buffer_count; ++b)
    launch.buffers[b] = *static_cast<CUdeviceptr *>(params[b]);
  for (int s = 0; s < fake::scalar_count; ++s)
    launch.scalars[s] = *static_cast<int32_t *>(params[fake::buffer_count + s]);
  for (int m = 0; m < fake::map_count; ++m)
    std::memcpy(&launch.maps[m], params[fake::buffer_count + fake::scalar_count + m], sizeof(uint64_t));
  std::lock_guard<std::mutex> lock(fake::mutex);
  fake::last = launch;
  return CUDA_SUCCESS;
}

// What a launcher for sm_90a (dynamic shared memory, the TMA's tensor maps)
// calls besides: accepted, the tensor maps counted and recorded.
namespace fake {
std::atomic<int> tensor_maps{0};
/// What one cuTensorMapEncodeTiled call asked for (rank 2, or 3 with a
/// batch; up to the driver's 5).
struct TensorMapCall {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  cuuint32_t rank = 0;
  CUdeviceptr address = 0;
  cuuint64_t dims[5] = {}, strides[4] = {};
  cuuint32_t box[5] = {}, element_strides[5] = {};
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
};
std::vector<TensorMapCall> tensor_map_calls; // guarded by mutex
} // namespace fake

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute, int, CUkernel, CUdevice) { return CUDA_SUCCESS; }

// Leaves in the map a tag, 1 + the call's index, that the launch reads back
// (Launch::maps): which encoded map each kernel parameter carries.
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                        const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                        const cuuint32_t *element_strides, CUtensorMapInterleave,
                                        CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof(*map));
  ++fake::tensor_maps;
  fake::TensorMapCall call;
  call.type = type;
  call.rank = rank;
  call.address = reinterpret_cast<CUdeviceptr>(address);
  for (cuuint32_t d = 0; d < 5 && d < rank; ++d) {
    call.dims[d] = dims[d];
    call.box[d] = box[d];
    call.element_strides[d] = element_strides[d];
    if (d > 0)
      call.strides[d - 1] = strides[d - 1];
  }
  call.swizzle = swizzle;
  std::lock_guard<std::mutex> lock(fake::mutex);
  fake::tensor_map_calls.push_back(call);
  const uint64_t tag = fake::tensor_map_calls.size();
  std::memcpy(map, &tag, sizeof(tag));
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

