// Every GPU-mapped catalog schedule, compiled to PTX and assembled by ptxas
// for Hopper (sm_90a) and Ampere (sm_80): the PTX must be valid, tell ptxas
// the block size (.maxntid), and fit in registers: no spills, no stack frame.
// Register counts and the schedule-to-PTX time are reported, not asserted.

#include "examples/Schedules.h"
#include "dsl/recipes/GemmSchedule.h"

#include <doctest/doctest.h>

using namespace coalesce;
using namespace coalesce::examples;

TEST_CASE("every GPU-mapped catalog schedule assembles with ptxas, without spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found (looked under ", cuda_toolkit_path("bin/ptxas"), "): skipping");
    return;
  }
  int mapped = 0;
  for (const ExampleSchedule &schedule : example_schedules()) {
    if (!schedule.maps_to_gpu)
      continue;
    ++mapped;
    Gemm g = scheduled_gemm(schedule);
    Pipeline pipeline(g.out);
    for (std::string sm : {"sm_90a", "sm_80"}) {
      INFO("schedule '", schedule.name, "' for ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      MESSAGE(schedule.name, " ", sm, ": schedule to PTX in ", pipeline.last_ptx_compile_ms(), " ms");
      CHECK(ptx.find(".maxntid") != std::string::npos);
      PtxasResult assembled = pipeline.assemble(target);
      CHECK_FALSE(assembled.cubin.empty());
      REQUIRE_FALSE(assembled.kernels.empty());
      for (const KernelResources &kernel : assembled.kernels) {
        INFO("kernel ", kernel.name, ", ptxas log:\n", assembled.log);
        MESSAGE(schedule.name, " ", sm, " ", kernel.name, ": ", kernel.registers, " registers, ",
                kernel.shared_bytes, " B shared");
        CHECK_FALSE(kernel.spills());
        CHECK(kernel.stack_frame_bytes == 0);
      }
    }
  }
  CHECK(mapped >= 8);
}

TEST_CASE("a CPU-only catalog schedule is refused for the GPU with a user error") {
  // The unscheduled chain computes acc at root, which would need a second
  // kernel; the catalog marks it CPU-only, and lowering for the GPU says why.
  for (const ExampleSchedule &schedule : example_schedules()) {
    if (schedule.maps_to_gpu)
      continue;
    INFO("schedule '", schedule.name, "'");
    Pipeline pipeline(scheduled_gemm(schedule).out);
    CHECK_THROWS_AS(pipeline.ptx(), UserError);
  }
}

// The tuned default (dsl/recipes/GemmSchedule.h) at each tiling the shape-aware
// choice can make: double-buffered cp.async staging, hoisted fragments, two
// blocks per SM requested for 256 threads. It must fit without spills.
TEST_CASE("the default GEMM schedule assembles at every tiling it chooses, without spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  struct Shape { int64_t M, N, K; } shapes[] = {{4096, 4096, 4096}, {2048, 1024, 512}, {1024, 1024, 1024}};
  for (const Shape &shape : shapes) {
    GemmTiling tiling = default_gemm_tiling(shape.M, shape.N, shape.K, GpuTarget().sm_count());
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
    Pipeline pipeline(g.out);
    for (std::string sm : {"sm_90a", "sm_80"}) {
      INFO(tiling.str(), " for ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      CHECK(ptx.find("cp.async") != std::string::npos);
      PtxasResult assembled = pipeline.assemble(target);
      REQUIRE(assembled.kernels.size() == 1);
      const KernelResources &kernel = assembled.kernels.front();
      MESSAGE(tiling.str(), " ", sm, ": ", kernel.registers, " registers, ", kernel.shared_bytes,
              " B shared, schedule to PTX in ", pipeline.last_ptx_compile_ms(), " ms");
      CHECK_FALSE(kernel.spills());
      CHECK(kernel.stack_frame_bytes == 0);
      if (tiling.threads_m * tiling.threads_n >= 256)
        CHECK(kernel.registers <= 128);
    }
  }
}

// The FP32 schedule's other knobs: a 3-stage pipeline, and threads arranged
// in warps of 4x8 and 8x4 (different thread indices, the same registers).
TEST_CASE("the FP32 GEMM schedule with 3 stages and warp layouts assembles without spills") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  GemmTiling three_stages = default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count());
  three_stages.stages = 3;
  GemmTiling warps_4x8 = three_stages;
  warps_4x8.stages = 2;
  warps_4x8.warp_rows = 4;
  warps_4x8.warp_cols = 8;
  GemmTiling warps_8x4 = default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count());
  warps_8x4.warp_rows = 8;
  warps_8x4.warp_cols = 4;
  for (const GemmTiling &tiling : {three_stages, warps_4x8, warps_8x4}) {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
    Pipeline pipeline(g.out);
    for (std::string sm : {"sm_90a", "sm_80"}) {
      INFO(tiling.str(), " for ", sm);
      GpuTarget target = parse_gpu_target(sm);
      const std::string &ptx = pipeline.ptx(target);
      // A pipeline waits for all but its newest stages - 2 copy groups.
      if (tiling.stages == 3)
        CHECK(ptx.find("cp.async.wait_group \t1;") != std::string::npos);
      PtxasResult assembled = pipeline.assemble(target);
      REQUIRE(assembled.kernels.size() == 1);
      const KernelResources &kernel = assembled.kernels.front();
      MESSAGE(tiling.str(), " ", sm, ": ", kernel.registers, " registers, ", kernel.shared_bytes, " B shared");
      CHECK_FALSE(kernel.spills());
      CHECK(kernel.stack_frame_bytes == 0);
      if (tiling.threads_m * tiling.threads_n >= 256)
        CHECK(kernel.registers <= 128);
    }
  }
}

TEST_CASE("ptxas's performance losses: the serialized wgmmas and the injected waits and arrives, nothing else") {
  PtxasResult result;
  result.log = "ptxas info    : Compiling entry function 'coalesce_sw' for 'sm_90a'\n"
               "ptxas info    : (C7519) warpgroup.arrive is injected in around line 1614 by compiler to allow use of "
               "registers in GMMA in function 'coalesce_sw'\n"
               "ptxas info    : (C7517) warpgroup.wait is injected in around line 1614 by compiler to allow use of "
               "registers defined by GMMA in function 'coalesce_sw'\n"
               "ptxas /tmp/x.ptx, line 9; warning : Potential Performance Loss: wgmma.mma_async instructions are "
               "serialized due to insufficient register resources for the wgmma pipeline in the function 'coalesce_t'\n"
               "ptxas info    : Used 201 registers, used 1 barriers, 0 bytes smem\n"
               "ptxas info    : (C7600) an unrelated note\n";
  std::vector<std::string> losses = result.performance_losses();
  REQUIRE(losses.size() == 3);
  CHECK(losses[0].find("C7519") != std::string::npos);
  CHECK(losses[1].find("C7517") != std::string::npos);
  CHECK(losses[2].find("serialized") != std::string::npos);
}
