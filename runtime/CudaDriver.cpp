// Loading the CUDA driver at run time; see CudaDriver.h.

#include "runtime/CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace coalesce::gpu {
namespace {

/// The outcome of the one-time probe: the table (valid only if ok) and, if not
/// ok, the reason a GPU cannot be used.
struct Probe {
  DriverApi api{};
  bool ok = false;
  std::string why_not;
};

/// Resolves `name` (or, if absent, `fallback`) into `slot`; records the first
/// missing symbol in `missing`.
template <typename Fn>
void resolve(void *lib, Fn &slot, const char *name, const char *fallback, std::string &missing) {
  void *sym = dlsym(lib, name);
  if (!sym && fallback)
    sym = dlsym(lib, fallback);
  if (!sym && missing.empty())
    missing = name;
  slot = reinterpret_cast<Fn>(sym);
}

/// Names for the results seen before the driver is usable, for when
/// cuGetErrorName itself fails (the toolkit's stub libcuda answers nothing).
const char *fallback_name(CUresult result) {
  switch (result) {
  case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
  case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY (libcuda.so.1 is the toolkit's stub, not a driver)";
  case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  default: return nullptr;
  }
}

std::string text_of(const DriverApi &api, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (api.get_error_name && api.get_error_name(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (api.get_error_string && api.get_error_string(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (!name)
    name = fallback_name(result);
  return str_cat(name ? name : "CUDA error", " (", text ? text : str_cat("code ", int(result)), ")");
}

Probe run_probe() {
  Probe p;
  if (const char *off = std::getenv("COALESCE_DISABLE_GPU"); off && *off && std::strcmp(off, "0") != 0) {
    p.why_not = "GPU disabled by the environment variable COALESCE_DISABLE_GPU";
    return p;
  }

  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, so they
  // cannot clash with anything else the process loads (cudart dlopens it too).
  // The handle is never closed: the driver lives as long as the process.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    p.why_not = str_cat("no CUDA driver (libcuda.so.1 not found", err ? str_cat(": ", err) : "", ")");
    return p;
  }

  DriverApi &a = p.api;
  std::string missing;
#define COALESCE_RESOLVE(member, prototype, symbol, fallback) resolve(lib, a.member, symbol, fallback, missing);
  COALESCE_FOR_EACH_DRIVER_ENTRY(COALESCE_RESOLVE)
#undef COALESCE_RESOLVE
  if (!missing.empty()) {
    p.why_not = str_cat("the CUDA driver libcuda.so.1 lacks the symbol ", missing,
                        " (driver too old? Coalesce needs a CUDA 12 or newer driver)");
    return p;
  }

  if (CUresult r = a.init(0); r != CUDA_SUCCESS) {
    p.why_not = str_cat("cuInit failed: ", text_of(a, r));
    return p;
  }
  int count = 0;
  if (CUresult r = a.device_get_count(&count); r != CUDA_SUCCESS) {
    p.why_not = str_cat("cuDeviceGetCount failed: ", text_of(a, r));
    return p;
  }
  if (count < 1) {
    p.why_not = "no CUDA device (the driver loaded and cuInit succeeded, but cuDeviceGetCount found 0 devices)";
    return p;
  }
  p.ok = true;
  return p;
}

/// The probe runs once per process (a function-local static is thread-safe).
const Probe &probe() {
  static const Probe p = run_probe();
  return p;
}

} // namespace

bool gpu_available(std::string *why_not) {
  const Probe &p = probe();
  if (why_not)
    *why_not = p.ok ? std::string() : p.why_not;
  return p.ok;
}

const DriverApi &driver() {
  const Probe &p = probe();
  if (!p.ok)
    throw GpuUnavailable(str_cat("a GPU is required but unavailable: ", p.why_not));
  return p.api;
}

std::string cu_error_text(CUresult result) { return text_of(probe().api, result); }

} // namespace coalesce::gpu
