#include "bench/gpu_check/SwiGluCheck.h"

#include "bench/gpu_check/Report.h"
#include "examples/SwiGlu.h"
#include "runtime/GpuDevice.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

namespace {

struct Shape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

// Partial tiles and a K that is no multiple of the step; K = 0 (no
// products: silu(0) * 0), and the K = 1 / K = 3 pair.
std::vector<Shape> ragged_shapes() {
  return {{70, 75, 37}, {131, 133, 67}, {64, 64, 64}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}};
}

// FFMA with `copies` (none: unstaged), or the MMA `tiling`, at `shapes`.
void check_swiglu(Type in, Type out, const std::string &form, const std::optional<TileCopies> &copies,
                  const std::optional<MmaTiling> &tiling, const std::vector<Shape> &shapes) {
  const std::string name = str_cat("swiglu ", form, " ", in, " in, ", out, " out");
  std::optional<examples::SwiGlu> s;
  std::optional<Pipeline> pipeline;
  std::string failure;
  try {
    s.emplace(in, out);
    if (tiling)
      s->schedule_mma(*tiling);
    else
      s->schedule_ffma(copies);
    pipeline.emplace(s->y);
  } catch (const std::exception &error) {
    failure = error.what();
  }
  for (const Shape &shape : shapes) {
    Outcome o;
    o.failure = failure;
    o.detail = tiling ? tiling->str() : "FFMA, 32 x 32 tiles, both k loops in one nest";
    if (pipeline) {
      try {
        o.error = examples::swiglu_error(in, out, shape.M, shape.N, shape.K,
                                         [&](const Arguments &args, Buffer &y) { pipeline->realize_on_gpu(args, y); });
        o.not_finite = std::isfinite(o.error) ? 0 : 1;
        // f32 sums of exact products (bf16) or of rounded ones (f32); a
        // 16-bit output rounds each element once (2^-9 relative).
        o.tolerance = out == Float(32) ? 1e-5 : 4e-3;
      } catch (const std::exception &error) {
        o.failure = error.what();
      }
    }
    record(name, shape.str(), "double (all rows)", o);
  }
}

void check_swiglu(Type in, Type out, const std::string &form, const std::optional<TileCopies> &copies,
                  const std::optional<MmaTiling> &tiling = std::nullopt) {
  std::vector<Shape> shapes = ragged_shapes();
  if (tiling) // whole 128 x 128 tiles and several k steps, rows the TMA reads
    shapes.insert(shapes.end(), {{131, 136, 272}, {1000, 1048, 1024}});
  check_swiglu(in, out, form, copies, tiling, shapes);
}

MmaTiling warpgroup_tiling(MmaKind kind, bool padded) {
  MmaTiling t = default_fused_gemms_tiling(kind, 4096, 4096, target_for_current_device().sm_count());
  t.tma_padded_copies = (padded) ? PaddedCopies::Both : PaddedCopies::None;
  return t;
}

} // namespace

void check_fused_reductions() {
  std::printf("\n== two reductions in one nest (fuse_reduction_with) ==\n");
  const std::vector<std::pair<std::string, std::optional<TileCopies>>> forms = {
      {"unstaged", std::nullopt},
      {"staged, one buffer", TileCopies{OneBuffer{}}},
      {"staged, registers", TileCopies{RegisterDoubleBuffer{true}}},
      {"staged, cp.async", TileCopies{AsyncCopies{3, true}}}};
  for (const auto &[form, copies] : forms) {
    check_swiglu(Float(32), Float(32), form, copies);
    check_swiglu(BFloat(16), BFloat(16), form, copies);
  }
  // Tensor cores: one tile of x feeds both sums' instructions. The warp
  // MMA's default tiling; the warpgroup MMA on default_fused_gemms_tiling's
  // 128 x 128 tiles (both accumulators, 128 per thread, in registers), the
  // TMA reading the inputs, or copies of them with padded rows.
  check_swiglu(BFloat(16), BFloat(16), "mma", std::nullopt,
               default_fused_gemms_tiling(MmaKind::BF16_m16n8k16, 1024, 1024, target_for_current_device().sm_count()));
  if (!target_for_current_device().has_warpgroup_mma())
    return;
  for (bool padded : {false, true})
    check_swiglu(BFloat(16), BFloat(16), padded ? "wgmma+tma+padded" : "wgmma+tma", std::nullopt,
                 warpgroup_tiling(MmaKind::BF16_wgmma_m64k16, padded));
  // f16 inputs with an f32 output (coalesce-aot --epilogue=swiglu's other form).
  check_swiglu(Float(16), Float(32), "wgmma+tma", std::nullopt, warpgroup_tiling(MmaKind::F16_wgmma_m64k16, false));
}

void swiglu_sanitizer_case() {
  if (!target_for_current_device().has_warpgroup_mma())
    return;
  // Both sums' copies through the TMA (rows of 136 elements, 16-byte
  // multiples), and through the padded copies at a ragged shape.
  check_swiglu(BFloat(16), BFloat(16), "wgmma+tma", std::nullopt, warpgroup_tiling(MmaKind::BF16_wgmma_m64k16, false),
               {{131, 136, 272}});
  check_swiglu(BFloat(16), BFloat(16), "wgmma+tma+padded", std::nullopt,
               warpgroup_tiling(MmaKind::BF16_wgmma_m64k16, true), {{131, 133, 67}});
}

} // namespace coalesce::gpu_check
