#pragma once
// Shared by the tests that assemble warpgroup-MMA kernels: ptxas reports
// the silent degradations only as information ("Potential Performance
// Loss": C7511 / C7514 / C7515 wgmma serialized; C7517 / C7519: waits or
// arrives injected; C7507 / C7508: setmaxnreg ignored), so each one fails
// the test here, as do spills and a stack frame.

#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <string>

namespace coalesce::testing {

/// The `kernels` kernels of `assembled` (one, or with padded copies
/// three): no spills, no stack, none of the codes.
inline void check_assembled_cleanly(const PtxasResult &assembled, size_t kernels = 1) {
  REQUIRE(assembled.kernels.size() == kernels);
  for (const KernelResources &kernel : assembled.kernels) {
    INFO(kernel.name);
    CHECK_FALSE(kernel.spills());
    CHECK(kernel.stack_frame_bytes == 0);
  }
  // Every "Potential Performance Loss" (C7511 and C7514 too: serialized
  // for registers, or for accumulators read inside the pipeline stage).
  INFO("ptxas's report:\n", assembled.log);
  CHECK(assembled.performance_losses().empty());
  for (const char *code : {"C7515", "C7517", "C7519", "C7507", "C7508"})
    CHECK(assembled.log.find(code) == std::string::npos);
}

} // namespace coalesce::testing
