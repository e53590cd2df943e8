// Launch-time specialization (scheduler/SpecializeSizes.h): the program a
// launch compiles when its sizes are multiples of 16. The variant drops the
// branches those sizes never take (the cp.async pipeline for rows the TMA
// cannot read, the vector copies' tests, a reduction's partial last step),
// assembles cleanly, and is chosen only for sizes that are multiples.

#include "AssembledCleanly.h"
#include "WarpgroupGemms.h"
#include "codegen/CodeGenPTX.h"
#include "codegen/PtxAssembler.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Pipeline.h"
#include "scheduler/SpecializeSizes.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

const std::vector<std::string> kAll = {"M", "N", "K"};

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

Func bf16_warpgroup_default() {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), BFloat(16));
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k,
                    default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 4096, GpuTarget().sm_count()));
  return g.out;
}

Func fp32_default() {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
  return g.out;
}

} // namespace

TEST_CASE("a launch specializes on the scalar arguments that are positive multiples of 16, and only on those") {
  Pipeline pipeline(bf16_warpgroup_default());
  const GpuProgram &program = pipeline.gpu_program();
  std::vector<std::string> all = specializable_sizes(program, {{"M", 4096}, {"N", 4096}, {"K", 4096}});
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<std::string>{"K", "M", "N"});
  CHECK(specializable_sizes(program, {{"M", 4093}, {"N", 4096}, {"K", 4097}}) == std::vector<std::string>{"N"});
  CHECK(specializable_sizes(program, {{"M", 4093}, {"N", 8}, {"K", 0}}).empty());
  // Buffers are never specialized, whatever a parameter of their name says.
  CHECK(specializable_sizes(program, {{"A", 16}, {"out", 32}}).empty());
}

TEST_CASE("the bf16 warpgroup default specialized for multiples of 16 drops the cp.async pipeline") {
  Pipeline pipeline(bf16_warpgroup_default());
  GpuTarget target = parse_gpu_target("sm_90a");
  const std::string general = pipeline.ptx(target);
  const std::string aligned = pipeline.specialized_ptx(target, kAll);
  // The general kernel keeps the pipeline for rows the TMA cannot read.
  CHECK(count(general, "cp.async.ca") + count(general, "cp.async.cg") > 0);
  CHECK(count(aligned, "cp.async.ca") + count(aligned, "cp.async.cg") == 0);
  CHECK(count(aligned, "cp.async.bulk.tensor") > 0);
  CHECK(count(aligned, "wgmma.mma_async") > 0);
  CHECK(aligned.size() < general.size() * 3 / 4);
  // Specialized on N alone, K % 8 is still open: the pipeline stays.
  const std::string n_only = pipeline.specialized_ptx(target, {"N"});
  CHECK(count(n_only, "cp.async.ca") + count(n_only, "cp.async.cg") > 0);
  if (ptxas_available()) {
    coalesce::testing::check_assembled_cleanly(assemble_ptx(aligned, target));
    coalesce::testing::check_assembled_cleanly(assemble_ptx(n_only, target));
  }
}

TEST_CASE("the FFMA default specialized on K has no partial last reduction step") {
  Pipeline pipeline(fp32_default());
  GpuTarget target = parse_gpu_target("sm_90a");
  const std::string general = pipeline.ptx(target);
  const std::string aligned = pipeline.specialized_ptx(target, {"K"});
  CHECK(count(aligned, "fma.rn.f32") < count(general, "fma.rn.f32"));
  CHECK(aligned.size() < general.size());
  if (ptxas_available()) {
    PtxasResult assembled = assemble_ptx(aligned, target);
    REQUIRE(assembled.kernels.size() == 1);
    CHECK_FALSE(assembled.kernels.front().spills());
  }
}

TEST_CASE("every kernel of a multi-kernel program is specialized, and each assembles") {
  // tf32 on the warpgroup MMA: rounded copies of A and B, then the GEMM.
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k,
                    default_mma_tiling(MmaKind::TF32_wgmma_m64k8, 4096, 4096, 4096, GpuTarget().sm_count()));
  Pipeline pipeline(g.out);
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() > 1);
  std::optional<GpuProgram> specialized = specialize_sizes(program, kAll);
  REQUIRE(specialized.has_value());
  const GpuProgram &variant = *specialized;
  REQUIRE(variant.kernels.size() == program.kernels.size());
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    CAPTURE(program.kernels[k].name);
    CHECK(variant.kernels[k].name == program.kernels[k].name);
  }
  GpuTarget target = parse_gpu_target("sm_90a");
  const std::string aligned = pipeline.specialized_ptx(target, kAll);
  CHECK(aligned.size() < pipeline.ptx(target).size());
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(assemble_ptx(aligned, target), program.kernels.size());
}

TEST_CASE("sizes that decide nothing make no variant: the general program is it") {
  // The FFMA default's partial k step depends on K alone: specialized on M
  // and N, no division or remainder becomes exact.
  Pipeline pipeline(fp32_default());
  CHECK_FALSE(specialize_sizes(pipeline.gpu_program(), {"M", "N"}).has_value());
  GpuTarget target = parse_gpu_target("sm_90a");
  CHECK(&pipeline.specialized_ptx(target, {"M", "N"}) == &pipeline.ptx(target));
  CHECK(specialize_sizes(pipeline.gpu_program(), {"K"}).has_value());
}
