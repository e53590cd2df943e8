#pragma once
// Two kernels that must write the same bits: a schedule that only moves
// where the work runs (where the epilogue runs, which warps take a tile)
// against the same arithmetic scheduled without it. The tested kernel is
// also compared with the double reference on sampled rows; the output is
// poisoned (0xFF) before each launch and every element read back must be
// finite. Results go to Report.h.

#include "bench/common/Precisions.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/Coalesce.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace coalesce::gpu_check {

struct BitsShape {
  int M, N, K;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

/// Where the schedules of a persistent block's tiles are checked: whole
/// tiles (512x768x256) and 4096^3 (the kernel specialized for sizes that
/// are multiples of 16), ragged tiles whose rows are whole 16-byte vectors
/// (515x776x259), rows that are not (515x777x259: the cp.async copies), and
/// the K = 1 / K = 3 pair.
extern const std::vector<BitsShape> kPersistentGridShapes;

/// The kernel under test and the one whose bits it must match, compiled
/// once (by `make`), at the first shape that runs them.
struct SameBitsKernels {
  std::unique_ptr<Pipeline> tested, baseline;
};

/// The GEMM + bias + exact GELU in precision `p` on tensor cores with tiling
/// `t` (the TMA's copies where it needs copies of the inputs).
std::unique_ptr<Pipeline> bias_gelu_pipeline(bench::Precision p, MmaTiling t);

/// Checks `kernels` (made by `make` where not yet made) on the GEMM + bias
/// + exact GELU of shape `s` in precision `p`; `detail` describes the
/// tested schedule, `baseline` names what its bits are compared with.
void check_same_bits(bench::Precision p, const std::function<SameBitsKernels()> &make, SameBitsKernels &kernels,
                     const BitsShape &s, const std::string &name, const std::string &detail,
                     const std::string &baseline);

/// check_same_bits at each of `shapes`, the kernels the bias + GELU
/// pipelines (bias_gelu_pipeline) of tilings `tested` and `baseline`,
/// compiled once.
void check_same_bits_of_tilings(bench::Precision p, const MmaTiling &tested, const MmaTiling &baseline,
                                const std::vector<BitsShape> &shapes, const std::string &name,
                                const std::string &baseline_name);

} // namespace coalesce::gpu_check
