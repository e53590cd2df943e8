#include "runtime/GemmCandidate.h"

#include "codegen/GpuTarget.h"
#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/IROperator.h"

#include <tuple>

namespace coalesce {

const char *gemm_family_name(GemmFamily family) {
  switch (family) {
  case GemmFamily::Ffma: return "ffma";
  case GemmFamily::WarpMma: return "warp";
  case GemmFamily::WarpgroupMma: return "warpgroup";
  }
  return "?";
}

std::string GemmCandidate::str() const {
  return str_cat(gemm_family_name(family), ": ", family == GemmFamily::Ffma ? ffma.str() : mma.str());
}

bool operator==(const GemmCandidate &a, const GemmCandidate &b) {
  if (a.family != b.family)
    return false;
  if (a.family == GemmFamily::Ffma) {
    const GemmTiling &x = a.ffma, &y = b.ffma;
    return std::tie(x.block_m, x.block_n, x.threads_m, x.threads_n, x.k_step, x.stages, x.async_copy, x.warp_rows,
                    x.warp_cols, x.a_padding, x.block_group_rows, x.split_k, x.split_k_mode) ==
           std::tie(y.block_m, y.block_n, y.threads_m, y.threads_n, y.k_step, y.stages, y.async_copy, y.warp_rows,
                    y.warp_cols, y.a_padding, y.block_group_rows, y.split_k, y.split_k_mode);
  }
  const MmaTiling &x = a.mma, &y = b.mma;
  return std::tie(x.kind, x.block_m, x.block_n, x.warp_m, x.warp_n, x.swap_ab, x.k_step, x.double_buffered, x.stages,
                  x.a_padding, x.b_padding, x.min_blocks_per_sm, x.block_group_rows, x.tma, x.producer_warps,
                  x.producer_registers, x.persistent_blocks, x.cluster_blocks, x.tma_padded_copies, x.tile_stores,
                  x.consumer_schedule, x.split_k, x.split_k_mode) ==
         std::tie(y.kind, y.block_m, y.block_n, y.warp_m, y.warp_n, y.swap_ab, y.k_step, y.double_buffered, y.stages,
                  y.a_padding, y.b_padding, y.min_blocks_per_sm, y.block_group_rows, y.tma, y.producer_warps,
                  y.producer_registers, y.persistent_blocks, y.cluster_blocks, y.tma_padded_copies, y.tile_stores,
                  y.consumer_schedule, y.split_k, y.split_k_mode);
}

MmaKind gemm_mma_kind(const GemmProblem &problem, GemmFamily family) {
  bool group = family == GemmFamily::WarpgroupMma;
  if (family == GemmFamily::Ffma || problem.dtype == "f32")
    user_error("GEMM problem ", problem.str(), ": dtype f32 runs on FFMA (family ffma); tf32, bf16 and f16 run on "
               "tensor cores (warp or warpgroup)");
  return mma_kind_for(gemm_input_type(problem), group); // tf32's inputs are f32
}

GemmCandidate default_gemm_candidate(const GemmProblem &problem, const std::string &sm, int sm_count) {
  problem.validate();
  GemmCandidate candidate;
  if (!problem.tensor_cores()) {
    candidate.ffma = default_gemm_tiling(problem.M, problem.N, problem.K, sm_count);
    return candidate;
  }
  // bf16/f16 where the TMA reads the inputs themselves; tf32 where it has
  // rows enough to pay for the copies its TMA reads
  // (warpgroup_mma_by_default).
  bool warpgroup = parse_gpu_target(sm).has_warpgroup_mma() &&
                   (problem.dtype == "tf32" ? warpgroup_mma_by_default(Float(32), problem.M)
                                            : problem.N % 8 == 0 && problem.K % 8 == 0);
  candidate.family = warpgroup ? GemmFamily::WarpgroupMma : GemmFamily::WarpMma;
  candidate.mma = default_mma_tiling(gemm_mma_kind(problem, candidate.family), problem.M, problem.N, problem.K,
                                     sm_count, false, problem.b_layout == GemmBLayout::NK);
  // A decode step's few rows of x: swap-AB.
  swap_ab_where_rows_are_few(candidate.mma, problem.M, problem.N, problem.K, sm_count);
  return candidate;
}

namespace {

Expr apply_epilogue(const std::string &epilogue, const Expr &sum, const Expr &bias) {
  if (epilogue == "none")
    return sum;
  if (epilogue == "bias")
    return sum + bias;
  // bias_<activation> (GemmProblem::validate has checked the name).
  return activation(epilogue.substr(5), sum + bias);
}

} // namespace

void apply_gemm_candidate(const GemmProblem &problem, const GemmCandidate &candidate, Func out, Func acc,
                          const Input &A, const Input &B, const Var &i, const Var &j, const RDom &k) {
  if (candidate.family == GemmFamily::Ffma) {
    if (problem.tensor_cores())
      user_error("GEMM problem ", problem.str(), ": dtype ", problem.dtype,
                 " runs on tensor cores; an FFMA tiling is for f32");
    attributed_to("schedule_gemm", [&] { schedule_gemm(out, acc, A, B, i, j, k, candidate.ffma); });
  } else {
    MmaTiling tiling = candidate.mma;
    tiling.kind = gemm_mma_kind(problem, candidate.family);
    use_tma_copies_where_needed(tiling, problem.M, problem.N, problem.K, false, problem.b_layout == GemmBLayout::NK);
    attributed_to("schedule_gemm_mma", [&] { schedule_gemm_mma(out, acc, A, B, i, j, k, tiling); });
  }
}

Func build_scheduled_gemm(const GemmProblem &problem, const GemmCandidate &candidate) {
  problem.validate();
  Param M("M"), N("N"), K("K");
  const bool b_nk = problem.b_layout == GemmBLayout::NK;
  Input A("A", gemm_input_type(problem), {M, K});
  Input B("B", gemm_input_type(problem), b_nk ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N});
  Input bias("bias", Float(32), {N});
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * (b_nk ? B(j, k) : B(k, j));
  out(i, j) = cast(gemm_output_type(problem), apply_epilogue(problem.epilogue, acc(i, j), bias(j)));
  apply_gemm_candidate(problem, candidate, out, acc, A, B, i, j, k);
  return out;
}

} // namespace coalesce
