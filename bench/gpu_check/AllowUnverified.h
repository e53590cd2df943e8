#pragma once
// While one lives, the library compiles a feature for the GPU that it
// refuses until this check has passed it (scheduler/CheckGpuVerified.h):
// its name joins COALESCE_UNVERIFIED_GPU, and leaves it after.

#include <cstdlib>
#include <string>

namespace coalesce::gpu_check {

class AllowUnverified {
public:
  explicit AllowUnverified(const std::string &feature) {
    if (const char *was = std::getenv("COALESCE_UNVERIFIED_GPU"))
      previous_ = was;
    std::string list = previous_.empty() ? feature : previous_ + "," + feature;
    setenv("COALESCE_UNVERIFIED_GPU", list.c_str(), 1);
  }
  ~AllowUnverified() {
    if (previous_.empty())
      unsetenv("COALESCE_UNVERIFIED_GPU");
    else
      setenv("COALESCE_UNVERIFIED_GPU", previous_.c_str(), 1);
  }
  AllowUnverified(const AllowUnverified &) = delete;
  AllowUnverified &operator=(const AllowUnverified &) = delete;

private:
  std::string previous_;
};

} // namespace coalesce::gpu_check
