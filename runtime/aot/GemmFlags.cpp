#include "runtime/aot/GemmFlags.h"

#include "dsl/Error.h"
#include "runtime/TuneProgress.h"
#include "runtime/aot/GemmLayouts.h"

#include <algorithm>
#include <cstdio>

namespace coalesce::aot_gemm {

Type element_type(InputType t) {
  switch (t) {
  case InputType::BF16: return BFloat(16);
  case InputType::F16: return Float(16);
  case InputType::E4M3: return Float8E4M3();
  case InputType::E5M2: return Float8E5M2();
  case InputType::F32:
  case InputType::TF32:
  case InputType::TF32Truncated: break;
  }
  return Float(32);
}

MmaKind mma_kind(InputType t, MmaFamily family) {
  bool group = family == MmaFamily::Warpgroup;
  if (group && t == InputType::F32)
    user_error("--mma=warpgroup multiplies tf32, bf16 or f16 inputs; --dtype=f32 runs on FFMA and has no "
               "warpgroup schedule: use --dtype=tf32 (f32 data rounded to tf32), bf16 or f16");
  if (t == InputType::TF32Truncated)
    return group ? MmaKind::TF32Truncated_wgmma_m64k8 : MmaKind::TF32Truncated_m16n8k8;
  return mma_kind_for(element_type(t), group);
}

MmaFamily GemmFlags::mma_family() const {
  if (mma != MmaFamily::Auto)
    return mma;
  // tf32 with few rows: the warp MMA (warpgroup_mma_by_default).
  const bool few_tf32_rows = dtype == InputType::TF32 && M.fixed() && !warpgroup_mma_by_default(Float(32), M.value());
  return target().has_warpgroup_mma() && dtype != InputType::F32 && !few_tf32_rows ? MmaFamily::Warpgroup
                                                                                   : MmaFamily::Warp;
}

int GemmFlags::chosen_split(int block_m, int block_n, int step, int blocks_per_sm) const {
  if (split_k > 0)
    return split_k;
  if (!M.fixed() || !N.fixed() || !K.fixed())
    user_error("--split-k=0 chooses the split from the shape: give --M, --N and --K, or a split count");
  int64_t tiles = ((M.value() + block_m - 1) / block_m) * ((N.value() + block_n - 1) / block_n);
  return default_split_k(tiles, K.value(), step, multiprocessors(), blocks_per_sm);
}

void GemmFlags::parse_warp_layout(GemmTiling *tiling) const {
  std::string text = warp_layout;
  if (text.empty())
    return;
  size_t x = text.find('x');
  auto number = [&](const std::string &part) {
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos)
      user_error("--warp-layout=", text, ": expected RxC, two positive numbers with R * C = 32 (e.g. 4x8)");
    return std::stoi(part);
  };
  if (x == std::string::npos)
    number("");
  tiling->warp_rows = number(text.substr(0, x));
  tiling->warp_cols = number(text.substr(x + 1));
  std::string why = warp_layout_error(tiling->threads_m, tiling->threads_n, tiling->warp_rows, tiling->warp_cols);
  if (!why.empty())
    user_error("--warp-layout=", text, ": ", why);
}

GemmProblem GemmFlags::tuning_problem() const {
  if (!M.fixed() || !N.fixed() || !K.fixed())
    user_error("--tuning-db and --autotune key on the exact shape: give --M, --N and --K");
  if (!bias && activation != Activation::None)
    user_error("--tuning-db and --autotune cover the epilogues none, bias, and bias with an activation; "
               "--bias=false with --activation=",
               activation.value_text(), " is not one of them");
  if (residual)
    user_error("--tuning-db and --autotune cover epilogues without a residual; leave out --residual, or set the "
               "tiling by hand");
  GemmProblem problem;
  problem.dtype = dtype.value_text();
  problem.out_dtype = out_dtype.value_text();
  problem.epilogue = !bias ? "none" : activation == Activation::None ? "bias" : "bias_" + activation.value_text();
  problem.M = M.value();
  problem.N = N.value();
  problem.K = K.value();
  problem.b_layout = b_layout;
  return problem;
}

GemmCandidate GemmFlags::tuned_candidate(const GemmProblem &problem) const {
  // One knob per line would take 25 lines.
  // clang-format off
  const std::initializer_list<const GeneratorParamBase *> knobs = {
      &tile_m, &tile_n, &reg_m, &reg_n, &split_k, &split_k_mode, &k_step, &warp_m, &warp_n, &mma, &stages,
      &min_blocks_per_sm, &block_groups, &persistent_blocks, &tma, &swap_ab, &producer_warps, &producer_registers,
      &tma_padded_copies, &cluster_blocks, &tile_stores, &consumer_schedule, &warp_layout, &double_buffered, &async_copy, &a_padding,
      &b_padding};
  // clang-format on
  // A knob given its default value (as the header's regenerating command
  // gives every flag) sets nothing.
  for (const GeneratorParamBase *knob : knobs)
    if (knob->is_set() && knob->value_text() != knob->default_text())
      user_error("--", knob->name(),
                 " sets a knob that --tuning-db/--autotune choose; leave it out, or set the "
                 "tiling by hand without them");
  if (!autotune) {
    std::string note;
    GemmCandidate candidate =
        tuned_or_default_candidate(tuning_db, problem, target().sm(), "", multiprocessors(), &note);
    std::fprintf(stderr, "%s\n", note.c_str());
    return candidate;
  }
  TuneRequest request;
  request.problem = problem;
  request.database = tuning_db;
  request.target_sm = target().sm();
  request.max_candidates = static_cast<size_t>(autotune_candidates.value());
  request.progress = progress_wanted(stderr);
  TuneOutcome outcome = tune_gemm_on_this_gpu(request);
  std::fprintf(stderr, "%s", outcome.result.summary().c_str());
  if (!request.database.empty())
    std::fprintf(stderr, "merged into the tuning database %s\n", request.database.c_str());
  return outcome.best;
}

MmaTiling GemmFlags::mma_tiling(MmaKind kind) const {
  // --split-k=0 at a fixed shape: the library's default for it, whose
  // split comes with its tile and combine (a deep K's 128 x 128 tiles and
  // combine kernel).
  // A batch of a known count: the tile counts every product's blocks.
  MmaTiling tiling =
      batched != Batched::None && batch.fixed()
          ? default_batched_mma_tiling(kind, batch.value(), M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0,
                                       K.fixed() ? K.value() : 0, multiprocessors())
      : split_k == 0 && M.fixed() && N.fixed() && K.fixed()
          ? default_mma_tiling(kind, M.value(), N.value(), K.value(), multiprocessors())
          : default_mma_tiling(kind, M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0, multiprocessors());
  // A decode step's few rows of x: swap-AB, as the library's default does
  // (the rule leaves the tiling alone elsewhere).
  if (swap_ab && epilogue != Algorithm::SwiGlu && M.fixed() && N.fixed() && K.fixed())
    swap_ab_where_rows_are_few(tiling, M.value(), N.value(), K.value(), multiprocessors());
  return with_knob_flags(tiling);
}

MmaTiling GemmFlags::with_knob_flags(MmaTiling tiling) const {
  const MmaFamily family = mma_family();
  if (tile_m > 0)
    tiling.block_m = tile_m;
  if (tile_n > 0)
    tiling.block_n = tile_n;
  if (warp_m > 0)
    tiling.warp_m = warp_m;
  if (warp_n > 0)
    tiling.warp_n = warp_n;
  if (k_step > 0)
    tiling.k_step = k_step;
  if (stages == 1)
    user_error("--stages=1: a pipeline has 2 to 8 stages (0: the tiling's choice)");
  if (stages > 0)
    tiling.stages = stages;
  if (min_blocks_per_sm >= 0)
    tiling.min_blocks_per_sm = min_blocks_per_sm;
  if (!async_copy)
    user_error("--async-copy=false: the tensor-core schedules copy A and B with cp.async only; leave the "
               "flag out, or use --dtype=f32");
  if (!double_buffered && stages > 2)
    user_error("--stages=", static_cast<int>(stages),
               " with --double-buffered=false: a single buffer holds one K step; leave --stages out, or keep "
               "double buffering");
  tiling.double_buffered = double_buffered;
  if (!double_buffered)
    tiling.stages = 2; // one buffer: no deeper pipeline
  if (a_padding >= 0)
    tiling.a_padding = a_padding;
  if (b_padding >= 0)
    tiling.b_padding = b_padding;
  tiling.block_group_rows = block_groups;
  tiling.persistent_blocks = persistent_blocks;
  tiling.tma = tma && family == MmaFamily::Warpgroup;
  if (producer_warps > 0 && !tiling.uses_tma())
    user_error("--producer-warps=", static_cast<int>(producer_warps),
               ": producer warps issue the TMA's copies, which this kernel does not use (they need "
               "--mma=warpgroup, 3 or more stages and --tma); leave the flag out");
  tiling.producer_warps = producer_warps;
  if (producer_registers > 0 && producer_warps != 4)
    user_error("--producer-registers=", static_cast<int>(producer_registers),
               ": registers are reallocated per warpgroup, so it takes --producer-warps=4");
  tiling.producer_registers = producer_registers;
  if (tma_padded_copies && !tiling.uses_tma())
    user_error("--tma-padded-copies: the padded copies are what the TMA reads, and this kernel does not use it "
               "(it needs --mma=warpgroup, 3 or more stages and --tma); leave the flag out");
  if (dtype == InputType::TF32 && tiling.uses_tma() && tma_padded_copies.is_set() && !tma_padded_copies)
    user_error("--tma-padded-copies=false with --dtype=tf32 and the TMA's copies: the tf32 warpgroup MMA reads "
               "A and B rounded to tf32 and B transposed, which only the copies make; leave the flag out, or "
               "use --tma=false (every thread's cp.async copies)");
  // Left out: the tiling's (for sizes given at run time, the copies made on
  // the launches whose rows are ragged; use_tma_copies_where_needed below
  // for sizes given here).
  if (tma_padded_copies.is_set())
    tiling.tma_padded_copies = tma_padded_copies ? PaddedCopies::Both : PaddedCopies::None;
  if (cluster_blocks > 0 && (cluster_blocks == 1 || !tiling.uses_tma()))
    user_error("--cluster-blocks=", static_cast<int>(cluster_blocks), ": clusters share the TMA's copies of B, ",
               cluster_blocks == 1
                   ? "and a cluster has 2 to 8 blocks"
                   : "which this kernel does not use (it needs --mma=warpgroup, 3 or more stages and --tma)",
               "; leave the flag out");
  tiling.cluster_blocks = cluster_blocks;
  tiling.consumer_schedule = consumer_schedule.value();
  if (tile_stores.value())
    tiling.tile_stores = *tile_stores.value();
  else if (tiling.consumer_schedule == ConsumerSchedule::PingPong)
    tiling.tile_stores = TileStores::Direct; // ping-pong's groups would share a staged tile
  else
    stage_values_where_sums_do_not_fit(tiling);
  if (stages == 0) // the tiling's stages: those that fit beside the knobs' output tile
    fit_output_tile_beside_stages(tiling);
  // Sizes fixed when generating whose rows the TMA cannot read, or reads
  // across sectors: padded copies (sizes given at run time keep the
  // in-kernel cp.async branch). A view's rows lie --lda / --ldb apart, not
  // a size: no copy for its sectors (M taken as unknown).
  use_tma_copies_where_needed(tiling, M.fixed() && views == Views::None ? M.value() : 0, N.fixed() ? N.value() : 0,
                              K.fixed() ? K.value() : 0, a_layout == ALayout::KM, b_layout == GemmBLayout::NK);
  // --split-k=0 on swapped tiles, or on the default's tile: the rule's
  // own split and combine (unless --split-k-mode names one).
  const bool tile_flags = tile_m > 0 || tile_n > 0 || warp_m > 0 || warp_n > 0 || k_step > 0 || min_blocks_per_sm >= 0;
  const bool whole_shape = M.fixed() && N.fixed() && K.fixed();
  if (!(split_k == 0 && whole_shape && (tiling.swap_ab || !tile_flags)))
    tiling.split_k = chosen_split(tiling.block_m, tiling.block_n, tiling.k_step, tiling.min_blocks_per_sm);
  if (split_k_mode.value())
    tiling.split_k_mode = *split_k_mode.value();
  else if (split_k != 0)
    tiling.split_k_mode = SplitKMode::Deterministic;
  return tiling;
}

void GemmFlags::check_layout_flags() const {
  GemmLayoutFlags flags;
  flags.batched = batched.value_text();
  flags.views = views.value_text();
  flags.a_km = a_layout == ALayout::KM;
  flags.dtype = dtype.value_text();
  flags.fp8 = fp8();
  flags.swiglu = epilogue == Algorithm::SwiGlu;
  flags.batch_given = batch.fixed();
  flags.batch = batch.fixed() ? batch.value() : 0;
  flags.lda_given = lda.fixed();
  flags.ldb_given = ldb.fixed();
  flags.output_view = output_view;
  flags.out_nm = out_layout == OutLayout::NM;
  flags.batch_stride_given = batch_stride.fixed();
  flags.batch_stride_a_given = batch_stride_a.fixed();
  flags.batch_stride_b_given = batch_stride_b.fixed();
  flags.ldc_given = ldc.fixed();
  flags.split_k = split_k;
  flags.persistent_blocks = persistent_blocks;
  flags.cluster_blocks = cluster_blocks;
  flags.autotune = autotune;
  flags.tuning_db = !tuning_db.value().empty();
  check_gemm_layout_flags(flags);
}

std::vector<const GeneratorParamBase *> GemmFlags::gemm_only_params() const {
  return {&bias,    &residual,     &a_layout,   &b_layout, &activation,          &scales,
          &split_k, &split_k_mode, &tuning_db,  &autotune, &autotune_candidates, &reg_m,
          &reg_n,   &warp_layout,  &async_copy, &swap_ab};
}

bool GemmFlags::uses_param(const GeneratorParamBase &param) const {
  // A single product's command line and signature leave the batch out.
  if (&param == &batch || &param == &batched)
    return batched != Batched::None;
  if (&param == &views)
    return views != Views::None;
  if (&param == &lda)
    return views == Views::A || views == Views::Both;
  if (&param == &ldb)
    return views == Views::B || views == Views::Both;
  if (&param == &output_view || &param == &ldc)
    return output_view;
  if (&param == &out_layout)
    return out_layout == OutLayout::NM;
  if (&param == &batch_stride)
    return batched != Batched::None && (output_view || out_layout == OutLayout::NM);
  if (&param == &batch_stride_a)
    return (batched == Batched::Both || batched == Batched::A) && uses_param(lda);
  if (&param == &batch_stride_b)
    return (batched == Batched::Both || batched == Batched::B) && uses_param(ldb);
  const std::vector<const GeneratorParamBase *> gemm_only = gemm_only_params();
  return epilogue != Algorithm::SwiGlu || std::find(gemm_only.begin(), gemm_only.end(), &param) == gemm_only.end();
}

} // namespace coalesce::aot_gemm
