// Launch-time specialization (scheduler/SpecializeSizes.h): the program a
// launch compiles when its sizes are multiples of 16, 8 or 4. The variant drops the
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

using namespace coalesce;
using namespace coalesce::examples;

namespace {

const SizeMultiples kAll = {{"M", 16}, {"N", 16}, {"K", 16}};

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

TEST_CASE("a launch specializes each scalar argument on the largest of 16, 8 and 4 it is a positive multiple of") {
  Pipeline pipeline(bf16_warpgroup_default());
  const GpuProgram &program = pipeline.gpu_program();
  CHECK(specializable_sizes(program, {{"M", 4096}, {"N", 4096}, {"K", 4096}}) == kAll);
  CHECK(specializable_sizes(program, {{"M", 4093}, {"N", 4096}, {"K", 4097}}) == SizeMultiples{{"N", 16}});
  CHECK(specializable_sizes(program, {{"M", 5000}, {"N", 3000}, {"K", 2000}}) ==
        SizeMultiples{{"K", 16}, {"M", 8}, {"N", 8}});
  CHECK(specializable_sizes(program, {{"M", 4093}, {"N", 12}, {"K", 4098}}) == SizeMultiples{{"N", 4}});
  CHECK(specializable_sizes(program, {{"M", 4093}, {"N", -16}, {"K", 0}}).empty());
  // Buffers are never specialized, whatever a parameter of their name says.
  CHECK(specializable_sizes(program, {{"A", 16}, {"out", 32}}).empty());
  // Keys and reports tell the multiples apart.
  CHECK(specialization_name({{"K", 16}, {"N", 8}}) == "K % 16, N % 8");
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
  const std::string n_only = pipeline.specialized_ptx(target, {{"N", 16}});
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
  const std::string aligned = pipeline.specialized_ptx(target, {{"K", 16}});
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
  CHECK_FALSE(specialize_sizes(pipeline.gpu_program(), {{"M", 16}, {"N", 16}}).has_value());
  GpuTarget target = parse_gpu_target("sm_90a");
  CHECK(&pipeline.specialized_ptx(target, {{"M", 16}, {"N", 16}}) == &pipeline.ptx(target));
  CHECK(specialize_sizes(pipeline.gpu_program(), {{"K", 16}}).has_value());
}

TEST_CASE("multiples of 8 are enough for the TMA's 16-byte rows of bf16: the cp.async pipeline goes, the rest stays") {
  // 5000 x 3000 x 2000: M and N multiples of 8, not of 16. The TMA test
  // (K % 8 == 0 && N % 8 == 0) folds, and with it the cp.async pipeline.
  Pipeline pipeline(bf16_warpgroup_default());
  GpuTarget target = parse_gpu_target("sm_90a");
  const std::string general = pipeline.ptx(target);
  const SizeMultiples eights = {{"K", 16}, {"M", 8}, {"N", 8}};
  const std::string &by_eight = pipeline.specialized_ptx(target, eights);
  CHECK(count(by_eight, "cp.async.ca") + count(by_eight, "cp.async.cg") == 0);
  CHECK(count(by_eight, "cp.async.bulk.tensor") > 0);
  CHECK(by_eight.size() < general.size() * 3 / 4);
  // A multiple of 4 does not make bf16 rows 16-byte multiples: the
  // pipeline for rows the TMA cannot read stays.
  const std::string &by_four = pipeline.specialized_ptx(target, {{"K", 16}, {"N", 4}});
  CHECK(count(by_four, "cp.async.ca") + count(by_four, "cp.async.cg") > 0);
  // Each set of multiples is its own variant.
  CHECK(&by_eight != &pipeline.specialized_ptx(target, kAll));
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(assemble_ptx(by_eight, target));
}
