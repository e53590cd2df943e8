#include "bench/gpu_check/EpilogueCheck.h"

#include "bench/gpu_check/Report.h"
#include "examples/ResidualGemm.h"
#include "runtime/GpuDevice.h"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
};

// The schedule compiled once, run at each shape.
void check_kind(examples::ExtraEpilogue e, MmaKind kind, const std::vector<Shape> &shapes) {
  const std::string name = std::string(is_warpgroup_mma(kind) ? "wgmma" : "mma") + " " +
                           examples::extra_epilogue_name(e) + " bf16";
  std::optional<Pipeline> pipeline;
  std::string detail, failure;
  try {
    examples::ExtraEpilogueGemm g = examples::make_extra_epilogue_gemm(e);
    MmaTiling t = default_mma_tiling(kind, 4096, 4096, 4096, gpu::Device::get().sm_count());
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
    detail = t.str();
    pipeline.emplace(g.out);
  } catch (const std::exception &error) {
    failure = error.what();
  }
  for (const auto &[M, N, K] : shapes) {
    Outcome o;
    o.detail = detail;
    o.failure = failure;
    if (pipeline) {
      try {
        examples::ExtraEpilogueData data(M, N, K, 11 + K);
        Buffer out({M, N}, BFloat(16));
        out.poison();
        pipeline->realize_on_gpu(data.arguments(e), out);
        Buffer got = examples::widened(out);
        o.not_finite = examples::count_nan(got);
        o.error = examples::relative_error(got, data.reference(e));
        o.tolerance = examples::kBf16OutputTolerance;
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K), "double (all rows)", o);
  }
}

} // namespace

void check_extra_epilogues() {
  std::printf("\n== Epilogues reading a residual, or scales and a second matrix (bf16) ==\n");
  // Ragged (padded TMA copies where the rows are not 16-byte multiples),
  // whole 128 x 256 tiles beside ragged ones (N % 8 == 0: stored through
  // shared memory), and K = 0, 1, 3.
  const std::vector<Shape> shapes = {{131, 133, 67}, {300, 520, 264}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}};
  for (examples::ExtraEpilogue e : {examples::ExtraEpilogue::Residual, examples::ExtraEpilogue::Scaled}) {
    check_kind(e, MmaKind::BF16_m16n8k16, shapes);
    if (target_for_current_device().has_warpgroup_mma())
      check_kind(e, MmaKind::BF16_wgmma_m64k16, shapes);
  }
}

} // namespace coalesce::gpu_check
