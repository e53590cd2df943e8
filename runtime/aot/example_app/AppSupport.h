#pragma once
// What the example app's drivers (main.cpp, fp8_main.cpp, swiglu_main.cpp)
// share: the Driver API's errors, device buffers, the device and its
// context, and the timing of back-to-back launches. Only cuda.h: an
// application using a generated launcher needs nothing else.

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace example_app {

/// Exits with the driver's description of `status` unless it is success.
inline void check(CUresult status, const char *what) {
  if (status == CUDA_SUCCESS)
    return;
  const char *name = "?";
  cuGetErrorName(status, &name);
  std::fprintf(stderr, "%s failed: %s\n", what, name);
  std::exit(2);
}

/// A device buffer of `size` bytes, freed at scope exit (none is 0 bytes:
/// the driver refuses that allocation, and the program exits naming it).
struct DeviceBuffer {
  explicit DeviceBuffer(size_t size) : bytes(size) { check(cuMemAlloc(&ptr, bytes), "cuMemAlloc"); }
  ~DeviceBuffer() { cuMemFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void upload(const void *data, size_t size) {
    if (size)
      check(cuMemcpyHtoD(ptr, data, size), "cuMemcpyHtoD");
  }
  CUdeviceptr ptr = 0;
  size_t bytes;
};

struct OpenDevice {
  CUdevice device;
  std::string name;
};

/// Device 0's primary context made current (release it with
/// cuDevicePrimaryCtxRelease(device) at the end).
inline OpenDevice open_device() {
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  char name[256] = {0};
  check(cuDeviceGetName(name, sizeof(name), device), "cuDeviceGetName");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return OpenDevice{device, name};
}

/// The mean time of `launches` calls of `launch` back to back on `stream`,
/// in ms, between two events; a failed call exits naming `what`.
template <typename Launch> double ms_per_launch(Launch launch, CUstream stream, const char *what, int launches = 20) {
  CUevent start, stop;
  check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cuEventRecord(start, stream), "cuEventRecord");
  for (int r = 0; r < launches; ++r)
    check(launch(), what);
  check(cuEventRecord(stop, stream), "cuEventRecord");
  check(cuEventSynchronize(stop), "the timed kernels");
  float ms = 0;
  check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  cuEventDestroy(start);
  cuEventDestroy(stop);
  return ms / launches;
}

/// The f32 value of bf16 `bits`.
inline float float_of_bf16(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &wide, 4);
  return x;
}

} // namespace example_app
