#include "runtime/RefuseUnverified.h"

#include "dsl/Error.h"

#include <cstdlib>
#include <cstring>

namespace coalesce {

void refuse_unverified_on_gpu(const GpuProgram &program, const std::string &action) {
  if (program.unverified_on_gpu.empty())
    return;
  const char *allow = std::getenv("COALESCE_ALLOW_UNVERIFIED");
  if (allow && std::strcmp(allow, "1") == 0)
    return;
  user_error("cannot ", action, " for '", program.name, "': it uses ", program.unverified_on_gpu.front(),
             ", which has not run on a GPU yet and stays refused until coalesce-gpu-check passes it there; "
             "run it on the CPU, choose another schedule, or set COALESCE_ALLOW_UNVERIFIED=1 to run it anyway");
}

} // namespace coalesce
