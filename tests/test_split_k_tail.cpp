// split_k_tail: only the tiles of a block loop's last iterations split
// their reduction; the others run whole, their epilogue from the registers.
// On the CPU against the double reference at ragged shapes with K = 0, 1, 3
// and tails of one row, several and more than the rows there are, both
// combines, the FFMA, warp-MMA and warpgroup schedules, along rows and
// along columns; the K = 1 / K = 3 pair against the unfused chain and the
// epilogue per slice, on the split rows alone; the work units in the nest;
// the rules; the PTX assembled by ptxas; and on a GPU the reference's
// values on every launch.

#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "codegen/PtxAssembler.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuDevice.h"
#include "scheduler/Lower.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

using namespace coalesce;
using namespace coalesce::examples;
using namespace coalesce::testing;

namespace {

// The rows [first, M) of a result, as a buffer of their own.
Buffer rows_from(const Buffer &b, int first) {
  int M = static_cast<int>(b.shape()[0]), N = static_cast<int>(b.shape()[1]);
  Buffer rows({M - first, N});
  for (int i = first; i < M; ++i)
    for (int j = 0; j < N; ++j)
      rows(i - first, j) = b(i, j);
  return rows;
}

Gemm ffma_tail(int slices, SplitKMode mode, const char *loop, int iterations, bool fold_bias = false) {
  Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(slices, mode), fold_bias);
  g.out.split_k_tail(Var(loop), iterations);
  return g;
}

Gemm mma_tail(MmaKind kind, int slices, SplitKMode mode, int rows) {
  Gemm g = make_gemm(Epilogue::BiasGelu, input_type(kind), Float(32));
  MmaTiling t;
  if (is_warpgroup_mma(kind)) {
    t = default_mma_tiling(kind, 64, 64, GpuTarget().sm_count());
    t.block_m = t.block_n = t.warp_m = t.warp_n = 64;
  } else {
    t.kind = kind;
    t.block_m = t.block_n = 64;
    t.warp_m = t.warp_n = 32;
    t.k_step = 16;
  }
  t.split_k = slices;
  t.split_k_mode = mode;
  t.split_k_tail_rows = rows;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

void check_shapes(Pipeline &pipeline, const Gemm &g, Type in, const Shape *shapes, size_t count) {
  for (size_t n = 0; n < count; ++n) {
    Shape s = shapes[n];
    INFO(s.M, "x", s.N, "x", s.K);
    GemmData data = make_data(s.M, s.N, s.K, 13, in);
    Buffer out = run(pipeline, data, s, g.epilogue);
    CHECK(count_nan(out) == 0);
    CHECK(relative_error(out, reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
  }
}

} // namespace

TEST_CASE("FFMA split_k_tail matches the reference at ragged shapes, K = 0, 1, 3, any tail, both combines") {
  struct Case {
    int slices;
    SplitKMode mode;
    const char *loop;
    int iterations;
    bool fold_bias;
  };
  // One row, two, more rows than any shape has (every tile split), along
  // columns; a folded bias (slice 0's, and a whole tile's, once).
  const Case cases[] = {{3, SplitKMode::Deterministic, "bi", 1, false},
                        {4, SplitKMode::Atomic, "bi", 2, false},
                        {2, SplitKMode::Deterministic, "bi", 100, false},
                        {3, SplitKMode::Deterministic, "bj", 1, false},
                        {5, SplitKMode::Deterministic, "bi", 1, true}};
  for (const Case &c : cases) {
    INFO(c.slices, " slices, ", split_k_mode_name(c.mode), ", the last ", c.iterations, " of ", c.loop,
         c.fold_bias ? ", bias folded" : "");
    Gemm g = ffma_tail(c.slices, c.mode, c.loop, c.iterations, c.fold_bias);
    Pipeline pipeline(g.out);
    check_shapes(pipeline, g, Float(32), std::begin(kShapes), std::size(kShapes));
    // The workspace kept between calls: a second run of each shape again.
    check_shapes(pipeline, g, Float(32), std::begin(kShapes), std::size(kShapes));
    // In groups of two block rows (gpu_block_groups, along rows only): the
    // work units' rows grouped as any block rows are, the same result.
    if (std::string(c.loop) == "bi") {
      g.out.gpu_block_groups(2);
      Pipeline grouped(g.out);
      check_shapes(grouped, g, Float(32), std::begin(kShapes), std::size(kShapes));
    }
  }
}

TEST_CASE("split_k_tail runs the epilogue once per element: the K = 1 / K = 3 pair, on the split rows") {
  // 70 rows in tiles of 32: rows 64..69 are the last block row, split 3
  // ways; rows 0..63 are whole.
  const int slices = 3;
  Gemm g = ffma_tail(slices, SplitKMode::Deterministic, "bi", 1);
  Pipeline pipeline(g.out);
  for (int K : {1, 3}) {
    INFO("K = ", K);
    Shape s{70, 33, K};
    GemmData data = make_data(s.M, s.N, s.K, 17);
    Buffer out = run(pipeline, data, s, g.epilogue);
    CHECK(relative_error(out, unfused_chain(data, s.M, s.N, s.K, g.epilogue)) < 1e-6);
    CHECK(relative_error(rows_from(out, 64), rows_from(epilogue_per_slice(data, s, slices, g.epilogue), 64)) > 1e-2);
  }
}

TEST_CASE("tensor-core split_k_tail schedules (warp MMA, warpgroup MMA) match the reference") {
  const Shape shapes[] = {{37, 70, 0}, {37, 70, 1}, {37, 70, 3}, {70, 65, 203}, {130, 65, 100}};
  struct Case {
    MmaKind kind;
    SplitKMode mode;
    int rows;
  };
  const Case cases[] = {{MmaKind::BF16_m16n8k16, SplitKMode::Deterministic, 1},
                        {MmaKind::TF32_m16n8k8, SplitKMode::Atomic, 1},
                        {MmaKind::BF16_wgmma_m64k16, SplitKMode::Deterministic, 1},
                        {MmaKind::F16_wgmma_m64k16, SplitKMode::Deterministic, 2}};
  for (const Case &c : cases) {
    INFO(mma_kind_name(c.kind), ", ", split_k_mode_name(c.mode), ", last ", c.rows, " block rows");
    Gemm g = mma_tail(c.kind, 3, c.mode, c.rows);
    Pipeline pipeline(g.out);
    for (Shape s : shapes) {
      INFO(s.M, "x", s.N, "x", s.K);
      GemmData data = mma_data(c.kind, s, 5);
      CHECK(relative_error(run(pipeline, data, s, g.epilogue), reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
    }
  }
}

TEST_CASE("the tail loop's blocks are work units: each split tile's slices, then the whole tiles") {
  Gemm g = ffma_tail(4, SplitKMode::Deterministic, "bi", 1);
  const std::string nest = Pipeline(g.out).loop_nest();
  INFO(nest);
  // R block rows become 4 slices of the last and the R - 1 whole ones, in
  // that order: the units from 4 * (the split rows) on are whole.
  CHECK_HAS(nest, "for bi_units in gpu_block.y(0, ");
  CHECK_HAS(nest, "let bi = select(bi_units >= min(1, ceil(M/32))*4, bi_units - min(1, ceil(M/32))*4, ");
  CHECK_HAS(nest, "let kz = select(bi_units >= min(1, ceil(M/32))*4, 0, bi_units % 4)");
  CHECK_HAS(nest, "let slices = select(bi_units >= min(1, ceil(M/32))*4, 1, 4)");
  // The partial sums: the tail's tiles only (bi counted from the first
  // split row), by register.
  CHECK_HAS(nest, "acc.partials[bi - ceil(M/32) + min(1, ceil(M/32)), bj, kz, ");
  CHECK_HAS(nest, "last_arrival(acc.tile_counters[bi, bj], slices)");
  CHECK_HAS(nest, "if slices > 1:");
  CHECK(nest.find("gpu_block.z") == std::string::npos);
  // Every tile is split without split_k_tail, with a loop of slices.
  Gemm all = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(4, SplitKMode::Deterministic));
  const std::string plain = Pipeline(all.out).loop_nest();
  CHECK_HAS(plain, "for kz in gpu_block.z(0, 4)");
  CHECK(plain.find("slices") == std::string::npos);
}

TEST_CASE("split_k_tail's rules: after split_k, on a block loop, not with what walks tiles in other orders") {
  SUBCASE("without split_k") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(1, SplitKMode::Deterministic));
    CHECK_HAS(user_error_of([&] { g.out.split_k_tail(Var("bi"), 1); }), "call split_k first");
  }
  SUBCASE("no iterations, or a loop the output does not have") {
    Gemm g = ffma_gemm(Epilogue::BiasGelu, ffma_tiling(3, SplitKMode::Deterministic));
    CHECK_HAS(user_error_of([&] { g.out.split_k_tail(Var("bi"), 0); }), "at least 1");
    CHECK_HAS(user_error_of([&] { g.out.split_k_tail(Var("nowhere"), 1); }), "'nowhere' is not a loop of 'out'");
    // The failed calls left the schedule as it was: every tile split.
    CHECK_HAS(Pipeline(g.out).loop_nest(), "for kz in gpu_block.z(0, 3)");
  }
  SUBCASE("a thread loop") {
    Gemm g = ffma_tail(3, SplitKMode::Deterministic, "ti", 1);
    std::string message = user_error_of([&] { lower_loop_nest(g.out); });
    CHECK_HAS(message, "split_k_tail(ti, 1)");
    CHECK_HAS(message, "must be a block loop");
  }
  SUBCASE("the combine kernel") {
    Gemm g = ffma_tail(3, SplitKMode::CombineKernel, "bi", 1);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(g.out); }), "the whole tiles write none");
  }
  SUBCASE("persistent blocks") {
    Gemm persistent = ffma_tail(3, SplitKMode::Deterministic, "bi", 1);
    persistent.out.gpu_persistent_blocks(8);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(persistent.out); }), "and gpu_persistent_blocks");
  }
  SUBCASE("a loop named like the work units") {
    Gemm g = make_gemm(Epilogue::BiasGelu);
    Var bi("bi"), bj("bi_units"), ii("ii"), jj("jj");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ii, jj});
    g.out.fuse_epilogue(g.acc, bj);
    g.acc.update().allow_reassociation();
    g.out.split_k(g.acc, g.k, Var("kz"), 2).split_k_tail(bi, 1);
    CHECK_HAS(user_error_of([&] { lower_loop_nest(g.out); }), "names its block loop 'bi_units'");
  }
}

TEST_CASE("split_k_tail kernels assemble with ptxas: the counted arrival behind a branch on the slice count") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  Gemm ffma = ffma_tail(4, SplitKMode::Deterministic, "bi", 1);
  Gemm wgmma = mma_tail(MmaKind::BF16_wgmma_m64k16, 4, SplitKMode::Deterministic, 1);
  for (Gemm *g : {&ffma, &wgmma}) {
    Pipeline pipeline(g->out);
    GpuTarget target = parse_gpu_target("sm_90a");
    const std::string &ptx = pipeline.ptx(target);
    CHECK_HAS(ptx, "atom.global.add.u32");
    CHECK_HAS(ptx, "fence.acq_rel.gpu");
    PtxasResult assembled = pipeline.assemble(target);
    REQUIRE(assembled.kernels.size() == 1);
    CHECK_FALSE(assembled.kernels.front().spills());
  }
}

TEST_CASE("on a GPU, split_k_tail gives the reference's values, the same bits on every launch") {
  check_same_bits_on_gpu(ffma_tail(5, SplitKMode::Deterministic, "bi", 1));
}
