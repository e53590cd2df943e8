// Device, buffers, modules, launches and timing on the CUDA Driver API; see
// GpuDevice.h.

#include "runtime/GpuDevice.h"

#include <cctype>
#include <utility>

namespace coalesce::gpu {
namespace {

int attribute(CUdevice device, CUdevice_attribute attr, const char *what) {
  int value = 0;
  cu_check(driver().device_get_attribute(&value, attr, device), "cuDeviceGetAttribute(", what, ")");
  return value;
}

int func_attribute(CUfunction fn, CUfunction_attribute attr, const char *what) {
  int value = 0;
  cu_check(driver().func_get_attribute(&value, attr, fn), "cuFuncGetAttribute(", what, ")");
  return value;
}

/// The names following ".entry" in PTX text, to list them when a lookup fails.
std::vector<std::string> ptx_entries(const std::string &ptx) {
  std::vector<std::string> names;
  const std::string key = ".entry";
  for (size_t at = ptx.find(key); at != std::string::npos; at = ptx.find(key, at + key.size())) {
    size_t i = at + key.size();
    if (i < ptx.size() && !std::isspace(static_cast<unsigned char>(ptx[i])))
      continue; // e.g. ".entry_foo": not the directive
    while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i])))
      ++i;
    size_t end = i;
    while (end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[end])) || ptx[end] == '_' ||
                                ptx[end] == '$' || ptx[end] == '.'))
      ++end;
    if (end > i)
      names.push_back(ptx.substr(i, end - i));
  }
  return names;
}

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

} // namespace

// ---- Device -----------------------------------------------------------------

Device::Device() {
  const DriverApi &d = driver(); // throws GpuUnavailable when there is no GPU
  cu_check(d.device_get(&device_, 0), "cuDeviceGet(0)");
  cu_check(d.primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain (device 0)");
  cu_check(d.ctx_set_current(context_), "cuCtxSetCurrent (making device 0's primary context current)");
  char name[256] = {};
  cu_check(d.device_get_name(name, sizeof name - 1, device_), "cuDeviceGetName");
  name_ = name;
  sm_count_ = attribute(device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  compute_capability_ = 10 * attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major") +
                        attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor");
  l2_bytes_ = attribute(device_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 cache size");
  max_shared_optin_ =
      attribute(device_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "max shared memory per block opt-in");
  max_threads_per_block_ = attribute(device_, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
}

int sm_count_for(const GpuTarget &target) {
  return gpu_available() ? Device::get().sm_count() : target.sm_count();
}

Device &Device::get() {
  // Deliberately leaked: destroying it at exit would race the driver's own
  // teardown. If construction throws, the next call tries again.
  static Device *device = new Device();
  // A context is current per thread; make ours current on each new thread.
  thread_local bool current = false;
  if (!current) {
    cu_check(driver().ctx_set_current(device->context_), "cuCtxSetCurrent (making device 0's primary context current)");
    current = true;
  }
  return *device;
}

void Device::memory_info(size_t *free_bytes, size_t *total_bytes) const {
  size_t f = 0, t = 0;
  cu_check(driver().mem_get_info(&f, &t), "cuMemGetInfo");
  if (free_bytes)
    *free_bytes = f;
  if (total_bytes)
    *total_bytes = t;
}

// ---- DeviceBuffer -------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) {
  Device &device = Device::get();
  if (bytes == 0)
    return; // cuMemAlloc rejects 0 bytes; an empty buffer needs no memory
  CUresult r = driver().mem_alloc(&ptr_, bytes);
  if (r != CUDA_SUCCESS) {
    ptr_ = 0;
    std::string extra;
    size_t free_bytes = 0, total_bytes = 0;
    if (r == CUDA_ERROR_OUT_OF_MEMORY && driver().mem_get_info(&free_bytes, &total_bytes) == CUDA_SUCCESS)
      extra = str_cat("; the device (", device.name(), ") has ", free_bytes, " of ", total_bytes, " bytes free");
    user_error("cuMemAlloc of ", bytes, " bytes failed: ", cu_error_text(r), extra);
  }
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  // A failure here (e.g. the driver already shut down at exit) cannot be
  // reported from a destructor and leaks nothing that outlives the process.
  if (ptr_)
    driver().mem_free(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void *src, size_t bytes) {
  if (bytes != bytes_)
    user_error("DeviceBuffer::upload of ", bytes, " bytes into a device buffer of ", bytes_,
               " bytes: the sizes must match");
  if (bytes == 0)
    return;
  if (!src)
    user_error("DeviceBuffer::upload from a null host pointer");
  Device::get();
  cu_check(driver().memcpy_htod(ptr_, src, bytes), "cuMemcpyHtoD of ", bytes, " bytes");
}

void DeviceBuffer::download(void *dst, size_t bytes) const {
  if (bytes != bytes_)
    user_error("DeviceBuffer::download of ", bytes, " bytes from a device buffer of ", bytes_,
               " bytes: the sizes must match");
  if (bytes == 0)
    return;
  if (!dst)
    user_error("DeviceBuffer::download into a null host pointer");
  Device::get();
  cu_check(driver().memcpy_dtoh(dst, ptr_, bytes), "cuMemcpyDtoH of ", bytes, " bytes");
}

void DeviceBuffer::fill_bytes(uint8_t value) {
  if (bytes_ == 0)
    return;
  Device::get();
  cu_check(driver().memset_d8(ptr_, value, bytes_), "cuMemsetD8 of ", bytes_, " bytes");
}

// ---- Module -------------------------------------------------------------------

Module Module::load_ptx(const std::string &ptx) {
  Device::get();
  if (ptx.empty())
    user_error("Module::load_ptx: the PTX text is empty");
  // The JIT writes its diagnostics into these buffers; on return the size
  // options hold the bytes actually written.
  constexpr size_t kLogBytes = 64 * 1024;
  std::string error_log(kLogBytes, '\0'), info_log(kLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  void *values[] = {error_log.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)), info_log.data(),
                    reinterpret_cast<void *>(uintptr_t(kLogBytes)), reinterpret_cast<void *>(uintptr_t(1))};
  Module m;
  CUresult r = driver().module_load_data_ex(&m.module_, ptx.c_str(), sizeof options / sizeof options[0], options,
                                            values);
  error_log.resize(error_log.find('\0') == std::string::npos ? error_log.size() : error_log.find('\0'));
  info_log.resize(info_log.find('\0') == std::string::npos ? info_log.size() : info_log.find('\0'));
  if (r != CUDA_SUCCESS) {
    m.module_ = nullptr;
    user_error("cuModuleLoadDataEx (JIT-compiling ", ptx.size(), " bytes of PTX) failed: ", cu_error_text(r),
               error_log.empty() ? std::string("; the JIT wrote no error log") : "\nJIT error log:\n" + error_log);
  }
  m.entries_ = ptx_entries(ptx);
  m.info_log_ = std::move(info_log);
  return m;
}

Module Module::load_cubin(const std::string &cubin, const std::string &ptx) {
  Device::get();
  if (cubin.empty())
    user_error("Module::load_cubin: the binary is empty");
  Module m;
  CUresult r = driver().module_load_data_ex(&m.module_, cubin.data(), 0, nullptr, nullptr);
  if (r != CUDA_SUCCESS) {
    m.module_ = nullptr;
    user_error("cuModuleLoadDataEx (loading ", cubin.size(), " bytes of ptxas's binary) failed: ", cu_error_text(r));
  }
  m.entries_ = ptx_entries(ptx);
  return m;
}

Module::~Module() { release(); }

Module::Module(Module &&other) noexcept
    : module_(std::exchange(other.module_, nullptr)), entries_(std::move(other.entries_)),
      info_log_(std::move(other.info_log_)) {}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    release();
    module_ = std::exchange(other.module_, nullptr);
    entries_ = std::move(other.entries_);
    info_log_ = std::move(other.info_log_);
  }
  return *this;
}

void Module::release() noexcept {
  if (module_)
    driver().module_unload(module_); // errors at exit cannot be reported
  module_ = nullptr;
}

CUfunction Module::function(const std::string &name) const {
  if (!module_)
    user_error("Module::function('", name, "') on an empty (unloaded or moved-from) module");
  Device::get();
  CUfunction fn = nullptr;
  CUresult r = driver().module_get_function(&fn, module_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    user_error("no kernel named '", name, "' in the PTX module (its entries: ", join(entries_), ")");
  cu_check(r, "cuModuleGetFunction('", name, "')");
  return fn;
}

// ---- Launch and synchronization -----------------------------------------------

void launch(CUfunction fn, dims grid, dims block, size_t dynamic_shared_bytes, void **args, StreamOrder order) {
  Device &device = Device::get();
  if (!fn)
    user_error("launch: null kernel function");
  auto shape = [](dims d) { return str_cat(d.x, "x", d.y, "x", d.z); };
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    user_error("launch: grid ", shape(grid), " is out of range (each dimension >= 1; x <= 2^31-1, y and z <= 65535)");
  if (block.x < 1 || block.y < 1 || block.z < 1 || block.x > 1024 || block.y > 1024 || block.z > 64)
    user_error("launch: block ", shape(block), " is out of range (x, y <= 1024, z <= 64, each >= 1)");

  // The kernel's own limits: registers can cap threads per block below the
  // device's 1024, and static + dynamic shared memory must fit the opt-in max.
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  const int max_threads = func_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  if (threads > uint64_t(max_threads))
    user_error("launch: block ", shape(block), " has ", threads, " threads but this kernel allows at most ",
               max_threads, " (device limit ", device.max_threads_per_block(), "; fewer when it uses many registers)");
  const int static_shared = func_attribute(fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared size");
  if (static_shared + dynamic_shared_bytes > size_t(device.max_shared_per_block_optin()))
    user_error("launch: ", static_shared, " bytes of static plus ", dynamic_shared_bytes,
               " bytes of dynamic shared memory exceed the per-block maximum of ",
               device.max_shared_per_block_optin(), " bytes on ", device.name());
  // Above 48 KiB of dynamic shared memory a kernel must opt in explicitly.
  if (dynamic_shared_bytes > 48 * 1024)
    cu_check(driver().func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         int(dynamic_shared_bytes)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = ", dynamic_shared_bytes, ")");

  switch (order) {
  case StreamOrder::Serialized:
    cu_check(driver().launch_kernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    unsigned(dynamic_shared_bytes), /*stream=*/nullptr, args, /*extra=*/nullptr),
             "cuLaunchKernel (grid ", shape(grid), ", block ", shape(block), ", ", dynamic_shared_bytes,
             " bytes of dynamic shared memory)");
    return;
  case StreamOrder::Programmatic: {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid.x;
    config.gridDimY = grid.y;
    config.gridDimZ = grid.z;
    config.blockDimX = block.x;
    config.blockDimY = block.y;
    config.blockDimZ = block.z;
    config.sharedMemBytes = unsigned(dynamic_shared_bytes);
    config.hStream = nullptr;
    config.attrs = &attribute;
    config.numAttrs = 1;
    cu_check(driver().launch_kernel_ex(&config, fn, args, /*extra=*/nullptr), "cuLaunchKernelEx (grid ", shape(grid),
             ", block ", shape(block), ", ", dynamic_shared_bytes,
             " bytes of dynamic shared memory, programmatic stream serialization)");
    return;
  }
  }
}

void synchronize() {
  Device::get();
  cu_check(driver().ctx_synchronize(), "cuCtxSynchronize (waiting for the GPU; an earlier kernel may have faulted)");
}

// ---- EventTimer ---------------------------------------------------------------

EventTimer::EventTimer() {
  Device::get();
  cu_check(driver().event_create(&start_, CU_EVENT_DEFAULT), "cuEventCreate (timer start)");
  CUresult r = driver().event_create(&stop_, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) {
    driver().event_destroy(start_);
    cu_check(r, "cuEventCreate (timer stop)");
  }
}

EventTimer::~EventTimer() {
  if (start_)
    driver().event_destroy(start_);
  if (stop_)
    driver().event_destroy(stop_);
}

void EventTimer::start() {
  Device::get();
  cu_check(driver().event_record(start_, nullptr), "cuEventRecord (timer start)");
  started_ = true;
  stopped_ = false;
}

void EventTimer::stop() {
  if (!started_)
    user_error("EventTimer::stop() called before start()");
  Device::get();
  cu_check(driver().event_record(stop_, nullptr), "cuEventRecord (timer stop)");
  stopped_ = true;
}

float EventTimer::elapsed_ms() const {
  if (!started_ || !stopped_)
    user_error("EventTimer::elapsed_ms() needs start() and then stop() first");
  Device::get();
  cu_check(driver().event_synchronize(stop_), "cuEventSynchronize (waiting for the timed work)");
  float ms = 0;
  cu_check(driver().event_elapsed_time(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

} // namespace coalesce::gpu
