#pragma once
// The GPU as Coalesce uses it: device 0 through its primary context (the one
// the CUDA runtime, hence cuBLAS, uses too, so buffers are shared), device
// memory, PTX modules, kernel launches and event timing. All on the legacy
// default stream (0), so every operation is ordered after the previous one.
//
// Every constructor and call throws GpuUnavailable when there is no GPU and
// UserError when a driver call fails. No LLVM here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/GpuTarget.h"
#include "runtime/CudaDriver.h"

namespace coalesce::gpu {

/// A launch grid or block shape.
struct dims {
  unsigned x = 1, y = 1, z = 1;
};

/// Device 0 with its primary context retained (never released: it lives as
/// long as the process). get() makes the context current on the calling thread.
class Device {
public:
  /// The device; throws GpuUnavailable if there is none.
  static Device &get();

  const std::string &name() const { return name_; }
  int sm_count() const { return sm_count_; }
  /// major * 10 + minor, e.g. 90 for an H200.
  int compute_capability() const { return compute_capability_; }
  int64_t l2_bytes() const { return l2_bytes_; }
  /// The most shared memory one block may use once it opts in (227 KiB on sm_90).
  int max_shared_per_block_optin() const { return max_shared_optin_; }
  int max_threads_per_block() const { return max_threads_per_block_; }
  /// Free and total device memory, in bytes, now.
  void memory_info(size_t *free_bytes, size_t *total_bytes) const;

  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }

  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

private:
  Device();
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_;
  int sm_count_ = 0, compute_capability_ = 0, max_shared_optin_ = 0, max_threads_per_block_ = 0;
  int64_t l2_bytes_ = 0;
};

/// The multiprocessors a tiling should give work to: the device's when
/// there is a GPU (gpu_available), else those of the GPU `target` is tuned
/// for (GpuTarget::sm_count). The shape-aware tilings of dsl/recipes take it.
int sm_count_for(const GpuTarget &target);

/// Device memory, freed on destruction. Move-only. A zero-byte buffer holds no
/// allocation (ptr() == 0).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// The address as a typed device pointer (for cuBLAS and kernel arguments).
  template <typename T> T *as() const { return reinterpret_cast<T *>(static_cast<uintptr_t>(ptr_)); }

  /// Copies exactly bytes() bytes in or out (synchronously); `bytes` must equal
  /// bytes(), else UserError.
  void upload(const void *src, size_t bytes);
  void download(void *dst, size_t bytes) const;
  template <typename T> void upload(const std::vector<T> &src) { upload(src.data(), src.size() * sizeof(T)); }
  template <typename T> void download(std::vector<T> &dst) const { download(dst.data(), dst.size() * sizeof(T)); }

  /// Sets every byte to `value` (e.g. 0xFF poisons floats with NaN).
  void fill_bytes(uint8_t value);

private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// A loaded PTX module, unloaded on destruction. Move-only.
class Module {
public:
  /// JIT-compiles PTX text for the current device; a failure is a UserError
  /// carrying the JIT's error log.
  static Module load_ptx(const std::string &ptx);
  /// Loads a binary ptxas assembled from `ptx` for the current device (no
  /// JIT: the driver's JIT compiles one module at a time, ptxas runs in as
  /// many processes as there are threads); a failure is a UserError.
  static Module load_cubin(const std::string &cubin, const std::string &ptx);

  Module() = default;
  ~Module();
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The kernel named `name` (an .entry of the PTX); UserError listing the
  /// module's entries if there is none.
  CUfunction function(const std::string &name) const;
  /// The .entry names found in the PTX text.
  const std::vector<std::string> &entries() const { return entries_; }
  /// What the JIT said on success (register / spill info when verbose).
  const std::string &info_log() const { return info_log_; }

private:
  void release() noexcept;
  CUmodule module_ = nullptr;
  std::vector<std::string> entries_;
  std::string info_log_;
};

/// When a launch may start relative to the stream's previous one.
enum class StreamOrder {
  /// Once the previous launch has finished.
  Serialized,
  /// Programmatic stream serialization (sm_90 and later): as soon as the
  /// previous kernel lets it (griddepcontrol.launch_dependents); the kernel
  /// itself must wait for the previous one (griddepcontrol.wait) before it
  /// reads what that one writes.
  Programmatic,
};

/// Launches `fn` on the default stream. Checks the block size and shared
/// memory against the kernel's and device's limits first (UserError naming
/// them), raises CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES when
/// dynamic_shared_bytes exceeds 48 KiB, and checks the launch. Asynchronous
/// faults surface at the next synchronize().
void launch(CUfunction fn, dims grid, dims block, size_t dynamic_shared_bytes, void **args,
            StreamOrder order = StreamOrder::Serialized);

/// Waits for all work on the device; a kernel fault is reported here.
void synchronize();

/// Times GPU work between start() and stop() with a pair of CUDA events on
/// the default stream.
class EventTimer {
public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;

  void start();
  void stop();
  /// Waits for the stop event; milliseconds between start and stop.
  float elapsed_ms() const;

private:
  CUevent start_ = nullptr, stop_ = nullptr;
  bool started_ = false, stopped_ = false;
};

} // namespace coalesce::gpu
