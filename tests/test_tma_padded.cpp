// TmaCopies::padded_copy: inputs whose rows the TMA cannot describe
// (not whole 16-byte multiples) copied first into row-padded workspaces,
// each by a kernel of its own, and the TMA reading those. The CPU runs the
// copies and the pipeline as the GPU does, against the double reference at
// ragged shapes; the nest, the kernels, their tensor maps and the rules.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "NarrowOutputError.h"
#include "WarpgroupGemms.h"
#include "codegen/PtxAssembler.h"
#include "dsl/IRPrinter.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Reference.h"
#include "runtime/RefuseUnverified.h"
#include "scheduler/Lower.h"
#include "scheduler/LoweredFunc.h"
#include "scheduler/VerifyTensorCopies.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr MmaKind kKind = MmaKind::BF16_wgmma_m64k16;

// One warpgroup on a 64 x 64 tile, copied by the TMA from padded copies:
// made on every launch (Both), or only on the launches where an input's
// rows are ragged (WhereRagged).
MmaTiling padded_tiling(int stages = 3, int producer_warps = 0, PaddedCopies copies = PaddedCopies::Both) {
  MmaTiling t = coalesce::testing::one_tile_tma_tiling(kKind, stages);
  t.tma_padded_copies = copies;
  t.producer_warps = producer_warps;
  return t;
}

MmaTiling where_ragged_tiling() { return padded_tiling(3, 0, PaddedCopies::WhereRagged); }

// Both forms of the copies: every numerical test runs each.
constexpr PaddedCopies kForms[] = {PaddedCopies::Both, PaddedCopies::WhereRagged};

// A TMA copy of `input` into A's first slot, as a pass would leave it: for
// the verifiers' tests, which hand-build what a broken pass would emit.
Stmt copy_of(const std::string &input) {
  Expr slot = Load::make(BFloat(16), "A_shared", {Expr(0)});
  Expr barrier = Load::make(UInt(64), "A_full", {Expr(0)});
  return TensorCopy::make(input, {Expr(0), Expr(0)}, {64, 64}, slot, barrier, Evaluate::make(Expr(0)));
}

double error_against_reference(Pipeline &pipeline, int M, int N, int K, Epilogue e = Epilogue::BiasGelu) {
  return coalesce::testing::bf16_error_against_reference(pipeline, M, N, K, e, 7);
}

} // namespace

TEST_CASE("GEMMs + bias + GELU through row-padded copies match the double reference, ragged shapes included") {
  for (PaddedCopies form : kForms)
  for (auto [stages, producers] : std::vector<std::array<int, 2>>{{3, 0}, {4, 0}, {3, 1}}) {
    CAPTURE(padded_copies_name(form));
    CAPTURE(stages);
    CAPTURE(producers);
    Gemm g = coalesce::testing::bf16_scheduled(padded_tiling(stages, producers, form));
    Pipeline pipeline(g.out);
    // Rows of K and N elements that are and are not whole 16-byte
    // multiples, ragged against the tile and the k step; the same pipeline
    // computes them one after another (the workspace is rewritten each
    // time; with WhereRagged, each copy made, then not, then made again).
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{70, 72, 131},
                                                          {67, 45, 64},
                                                          {64, 64, 64},
                                                          {1, 1, 1},
                                                          {130, 137, 200},
                                                          {3, 9, 257},
                                                          {65, 70, 8},
                                                          {70, 80, 136}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
}

TEST_CASE("a GEMM through padded copies splits K as well") {
  for (PaddedCopies form : kForms) {
    CAPTURE(padded_copies_name(form));
    MmaTiling t = padded_tiling(3, 0, form);
    t.split_k = 3;
    Gemm g = coalesce::testing::bf16_scheduled(t);
    Pipeline pipeline(g.out);
    for (auto [M, N, K] : std::vector<std::array<int, 3>>{{70, 45, 331}, {64, 64, 192}}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, M, N, K) < 4e-3);
    }
  }
}

TEST_CASE("through padded copies the fused epilogue runs once, after the whole reduction (K = 1 / K = 3)") {
  for (PaddedCopies form : kForms)
  for (Epilogue e : {Epilogue::BiasRelu, Epilogue::BiasGelu}) {
    CAPTURE(padded_copies_name(form));
    Gemm g = coalesce::testing::bf16_scheduled(padded_tiling(3, 0, form), e);
    Pipeline pipeline(g.out);
    for (int K : {1, 3, 8, 9, 24, 27}) {
      CAPTURE(K);
      CHECK(error_against_reference(pipeline, 70, 45, K, e) < 4e-3);
    }
  }
}

TEST_CASE("the nest shows the copies first, the TMA reading them, and no cp.async fallback") {
  Gemm g = coalesce::testing::bf16_scheduled(padded_tiling());
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  CHECK_HAS(nest, "for A_row in gpu_block.x(0, M):  # a kernel of its own: the copy the TMA reads");
  // Each thread loads 8 elements 256 apart into registers, then stores them.
  CHECK_HAS(nest, "for A_step in serial(0, ceil(ceil(K/64)*64/2048)):");
  CHECK_HAS(nest, "allocate A_padded.A_piece[8] bf16 in register");
  CHECK_HAS(nest, "A_padded.A_piece[A_e] = select(A_step*2048 + A_e*256 + A_thread < K, A[A_row, "
                  "min(A_step*2048 + A_e*256 + A_thread, K - 1)], bf16(0.0f))");
  CHECK_HAS(nest, "if A_step*2048 + A_e_store*256 + A_thread < ceil(K/64)*64:");
  CHECK_HAS(nest, "A_padded[A_row, A_step*2048 + A_e_store*256 + A_thread] = A_padded.A_piece[A_e_store]");
  CHECK_HAS(nest, "B_padded.B_piece[B_e] = select(B_step*2048 + B_e*256 + B_thread < N, B[B_row, ");
  CHECK_HAS(nest, "tensor_copy A_padded[bi*64, 0] box 64x64 (0 outside A_padded)");
  CHECK_HAS(nest, "tensor_copy B_padded[0, bj*64] box 64x64 (0 outside B_padded)");
  // The copies come before the output's nest; no branch on the shape.
  CHECK(nest.find("A_padded[A_row") < nest.find("for bi in"));
  CHECK(nest.find("K % 8 == 0") == std::string::npos);
  CHECK(nest.find("async_load") == std::string::npos);
  CHECK_HAS(padded_tiling().str(), "TMA copies, from copies of A and B with padded rows");

  // Workspaces of the padded extents, never bound by name.
  std::vector<Argument> args = lowered_arguments(g.out);
  auto padded = std::find_if(args.begin(), args.end(), [](const Argument &a) { return a.name == "A_padded"; });
  REQUIRE(padded != args.end());
  CHECK(padded->is_workspace);
  REQUIRE(padded->extents.size() == 2);
  CHECK(to_string(padded->extents[1]) == "ceil(K/64)*64");
}

TEST_CASE("each copy is a kernel of its own, launched before the output's, whose tensor maps name the copies") {
  Gemm g = coalesce::testing::bf16_scheduled(padded_tiling());
  Pipeline pipeline(g.out);
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() == 3);
  CHECK(program.kernels[0].name == "out_A_padded");
  CHECK(program.kernels[1].name == "out_B_padded");
  CHECK(program.kernels[2].name == "out");
  for (size_t k = 0; k < 2; ++k) {
    CHECK(program.kernels[k].block == std::array<int, 3>{256, 1, 1});
    CHECK(program.kernels[k].tensor_maps.empty());
  }
  CHECK(to_string(program.kernels[0].grid[0]) == "M");
  const std::vector<TensorMapParam> &maps = program.kernels[2].tensor_maps;
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].input == "A_padded");
  CHECK(maps[1].input == "B_padded");
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")), 3);
}

TEST_CASE("the default tiling pads where a row of A or B is not a whole 16-byte multiple") {
  int sms = GpuTarget().sm_count();
  CHECK(default_mma_tiling(kKind, 4093, 4091, 4097, sms).tma_padded_copies == PaddedCopies::Both);
  CHECK(default_mma_tiling(kKind, 4096, 4091, 4096, sms).tma_padded_copies == PaddedCopies::Both);
  CHECK(default_mma_tiling(kKind, 4096, 4096, 4100, sms).tma_padded_copies == PaddedCopies::Both);
  CHECK(default_mma_tiling(kKind, 4096, 4096, 4096, sms).tma_padded_copies == PaddedCopies::None);
  // tf32 always: its copies round A and B and transpose B.
  CHECK(default_mma_tiling(MmaKind::TF32_wgmma_m64k8, 4096, 4096, 4096, sms).tma_padded_copies == PaddedCopies::Both);
  // Not without the TMA.
  MmaTiling cp_async = default_mma_tiling(kKind, 4093, 4091, 4097, sms);
  cp_async.tma = false;
  cp_async.tma_padded_copies = PaddedCopies::None;
  use_tma_copies_where_needed(cp_async, 4093, 4091, 4097);
  CHECK(cp_async.tma_padded_copies == PaddedCopies::None);
}

TEST_CASE("the default copies one input alone where its rows split sectors and many tiles read it") {
  int sms = GpuTarget().sm_count();
  // B's rows of 3000 bf16 (6,000 bytes: 16-byte multiples, not 32) read by
  // 40 block rows; A's of 2000 (4,000 bytes) are whole sectors.
  CHECK(default_mma_tiling(kKind, 5000, 3000, 2000, sms).tma_padded_copies == PaddedCopies::B);
  CHECK_HAS(default_mma_tiling(kKind, 5000, 3000, 2000, sms).str(), "TMA copies, from a copy of B with padded rows");
  // A's rows of 4104 (8,208 bytes) read by 16 block columns of 256.
  CHECK(default_mma_tiling(kKind, 4093, 4096, 4104, sms).tma_padded_copies == PaddedCopies::A);
  CHECK(default_mma_tiling(kKind, 5000, 3000, 3000, sms).tma_padded_copies == PaddedCopies::B); // A read by 12 columns
  CHECK(default_mma_tiling(kKind, 5000, 5000, 3000, sms).tma_padded_copies == PaddedCopies::Both);
  // Too few tiles read it for the copy to pay: B under 512 rows, A under
  // 16 columns of tiles.
  CHECK(default_mma_tiling(kKind, 512, 3000, 2000, sms).tma_padded_copies == PaddedCopies::None);
  CHECK(default_mma_tiling(kKind, 4096, 1024, 3000, sms).tma_padded_copies == PaddedCopies::None);
  // default_mma_tiling takes the layouts too.
  CHECK(default_mma_tiling(kKind, 5000, 3000, 2000, sms, false, true).tma_padded_copies == PaddedCopies::None);
  // By the layout: W stored N x K has rows of K, A stored K x M rows of M.
  auto rule = [&](int64_t M, int64_t N, int64_t K, bool a_km, bool b_nk) {
    MmaTiling t = default_mma_tiling(kKind, 4096, 4096, sms);
    use_tma_copies_where_needed(t, M, N, K, a_km, b_nk);
    return t.tma_padded_copies;
  };
  CHECK(rule(5000, 3000, 2000, false, true) == PaddedCopies::None);
  CHECK(rule(5000, 2000, 3000, false, true) == PaddedCopies::B);
  CHECK(rule(3000, 4096, 4096, true, false) == PaddedCopies::A);
  // A size known only at run time: no copy for sectors.
  CHECK(rule(0, 3000, 2000, false, false) == PaddedCopies::None);
  CHECK(rule(5000, 3000, 0, false, false) == PaddedCopies::None);
}

TEST_CASE("padded copies where the TMA cannot read them, and an input named like a copy, are rejected with the rule") {
  // padded_copy is TmaCopies' own (padded copies without the TMA cannot be
  // written); only a warpgroup MMA's stage takes the TMA that reads them.
  Gemm g = coalesce::testing::mma_tiled(MmaKind::BF16_m16n8k16, BFloat(16), BFloat(16), 32);
  TmaCopies copies;
  copies.stages = 3;
  copies.padded_copy = PaddedCopy::Always;
  RVar ko("ko"), kk("kk");
  g.acc.update().mma(g.k, ko, kk, 32).allow_reassociation().stage_in_shared(g.A, ko, {}, copies)
      .stage_in_shared(g.B, ko, {}, copies);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(g.out).loop_nest(); }),
            "'A' is staged with TmaCopies, but the TMA copies only the 128-byte swizzled tiles that warpgroup MMAs "
            "read");

  // A second input called A_padded: the name of A's copy.
  Param M("M"), N("N"), K("K");
  Input A("A", BFloat(16), {M, K}), A_padded("A_padded", BFloat(16), {M, K});
  Var i("i"), j("j");
  Func out("out");
  out(i, j) = A(i, j) + A_padded(i, j);
  CHECK_HAS(coalesce::testing::user_error_of([&] { Pipeline(out).loop_nest(); }),
            "names ending in _shared, _fetch, _full, _empty or _padded after an Input's name, and _tile after the "
            "output's, are reserved");
}

TEST_CASE("the verifier after lowering refuses a TMA copy of rows nothing checked the TMA can describe") {
  // Hand-built statements against the environment of real pipelines: what
  // a pass that forgot the test (or the padded copy) would leave behind.
  using coalesce::testing::internal_error_of;
  Gemm plain = coalesce::testing::bf16_scheduled(coalesce::testing::one_tile_tiling(kKind));
  Environment env = make_environment(plain.out);
  Expr k_rows = Variable::make(Int(32), "K") % 8 == 0, n_rows = Variable::make(Int(32), "N") % 8 == 0;
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(copy_of("A"), env); }),
            "a TMA copy of 'A' is not under the test that its rows are whole 16-byte multiples (K % 8 == 0)");
  // B's test does not cover A.
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(IfThenElse::make(n_rows, copy_of("A")), env); }),
            "a TMA copy of 'A' is not under the test");
  // In the else branch the test does not hold.
  CHECK_HAS(internal_error_of([&] {
              verify_tensor_copies(IfThenElse::make(k_rows, Evaluate::make(Expr(0)), copy_of("A")), env);
            }),
            "a TMA copy of 'A' is not under the test");
  CHECK(internal_error_of([&] { verify_tensor_copies(IfThenElse::make(k_rows && n_rows, copy_of("A")), env); }) ==
        "(no error)");
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(copy_of("A_padded"), env); }),
            "a TMA copy reads 'A_padded', which is neither an input nor a row-padded copy of one");
  // With padded copies, the copy needs no test.
  Gemm padded = coalesce::testing::bf16_scheduled(padded_tiling());
  Environment padded_env = make_environment(padded.out);
  CHECK(internal_error_of([&] { verify_tensor_copies(copy_of("A_padded"), padded_env); }) == "(no error)");
}

TEST_CASE("copies made only where the rows are ragged: one pipeline, each box read from the input or its copy") {
  Gemm g = coalesce::testing::bf16_scheduled(where_ragged_tiling());
  Pipeline pipeline(g.out);
  std::string nest = pipeline.loop_nest();
  // The copy has no rows where A's rows are whole 16-byte multiples.
  CHECK_HAS(nest, "for A_row in gpu_block.x(0, select(K % 8 == 0, 0, M)):");
  CHECK_HAS(nest, "for B_row in gpu_block.x(0, select(N % 8 == 0, 0, K)):");
  // Each box from A where its rows allow, else from the copy; no cp.async.
  CHECK_HAS(nest, "if K % 8 == 0:\n");
  CHECK_HAS(nest, "tensor_copy A[bi*64, 0] box 64x64 (0 outside A)");
  CHECK_HAS(nest, "tensor_copy A_padded[bi*64, 0] box 64x64 (0 outside A_padded)");
  CHECK_HAS(nest, "tensor_copy B[0, bj*64] box 64x64 (0 outside B)");
  CHECK_HAS(nest, "tensor_copy B_padded[0, bj*64] box 64x64 (0 outside B_padded)");
  CHECK(nest.find("async_load") == std::string::npos);
  CHECK_HAS(where_ragged_tiling().str(),
            "TMA copies, from copies of A and B with padded rows where their rows are ragged");

  // The workspace has no rows either then: the launch allocates none.
  std::vector<Argument> args = lowered_arguments(g.out);
  auto padded = std::find_if(args.begin(), args.end(), [](const Argument &a) { return a.name == "A_padded"; });
  REQUIRE(padded != args.end());
  CHECK(padded->is_workspace);
  REQUIRE(padded->extents.size() == 2);
  CHECK(to_string(padded->extents[0]) == "select(K % 8 == 0, 0, M)");

  // Three kernels; the copies' grids empty where they are not made (the
  // runtime and the launcher launch no empty grid); the output's kernel
  // takes a tensor map of each input and of each copy.
  const GpuProgram &program = pipeline.gpu_program();
  REQUIRE(program.kernels.size() == 3);
  CHECK(to_string(program.kernels[0].grid[0]) == "select(K % 8 == 0, 0, M)");
  std::vector<std::string> maps;
  for (const TensorMapParam &map : program.kernels[2].tensor_maps)
    maps.push_back(map.input);
  std::sort(maps.begin(), maps.end());
  CHECK(maps == std::vector<std::string>{"A", "A_padded", "B", "B_padded"});
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")), 3);
}

TEST_CASE("copies made only where the rows are ragged: none of rows fixed whole, always of rows fixed ragged") {
  auto scheduled = [](int64_t K) {
    Gemm g =
        make_gemm_with_extents(Epilogue::BiasGelu, BFloat(16), BFloat(16), Expr(), Expr(), Expr(static_cast<int>(K)));
    schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, where_ragged_tiling());
    return g;
  };
  // K fixed at 64: A is read as it lies, B (rows of N) still copied where N is ragged.
  Gemm whole = scheduled(64);
  Pipeline whole_pipeline(whole.out);
  std::string nest = whole_pipeline.loop_nest();
  CHECK(nest.find("A_padded") == std::string::npos);
  CHECK_HAS(nest, "tensor_copy A[bi*64, 0] box 64x64 (0 outside A)");
  CHECK_HAS(nest, "for B_row in gpu_block.x(0, select(N % 8 == 0, 0, 64)):");
  CHECK(whole_pipeline.gpu_program().kernels.size() == 2);
  // K is the pipeline's constant, no argument.
  auto error = [](Pipeline &pipeline, int M, int N, int K) {
    GemmData data = make_data(M, N, K, 7, BFloat(16));
    Arguments args = gemm_arguments(data, M, N, K, Epilogue::BiasGelu);
    args.erase("K");
    Buffer out({M, N}, BFloat(16));
    out.poison();
    pipeline.realize_on_cpu(args, out);
    Buffer wide({M, N});
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        wide(i, j) = out.at(i, j);
    return relative_error(wide, reference(data, M, N, K, Epilogue::BiasGelu));
  };
  CHECK(error(whole_pipeline, 70, 45, 64) < 4e-3);
  CHECK(error(whole_pipeline, 70, 48, 64) < 4e-3);
  // K fixed at 67: A is always copied, and read only from its copy.
  Gemm ragged = scheduled(67);
  Pipeline ragged_pipeline(ragged.out);
  nest = ragged_pipeline.loop_nest();
  CHECK_HAS(nest, "for A_row in gpu_block.x(0, M):");
  CHECK(nest.find("tensor_copy A[") == std::string::npos);
  CHECK(error(ragged_pipeline, 70, 45, 67) < 4e-3);
}

TEST_CASE("copies made only where the rows are ragged, where every launch needs the copy, are rejected") {
  // The refusal of `kind` with both inputs staged so.
  auto refusal = [](MmaKind kind) {
    TmaCopies copies;
    copies.stages = 3;
    copies.padded_copy = PaddedCopy::WhereRowsAreRagged;
    RVar ko("ko"), kk("kk");
    Gemm h = coalesce::testing::mma_tiled(kind, Float(32), Float(32));
    h.acc.update()
        .mma(h.k, ko, kk, 32)
        .allow_reassociation()
        .stage_in_shared(h.A, ko, {}, copies)
        .stage_in_shared(h.B, ko, {}, copies);
    return coalesce::testing::user_error_of([&] { Pipeline(h.out).loop_nest(); });
  };
  // tf32's copies round (and transpose B): needed on every launch.
  std::string message = refusal(MmaKind::TF32_wgmma_m64k8);
  CHECK_HAS(message, "'A' is staged with TmaCopies copied first only where its rows are ragged "
                     "(PaddedCopy::WhereRowsAreRagged), but tf32 wgmma multiplies the bits it finds in shared memory");
  CHECK_HAS(message, "set TmaCopies::padded_copy to PaddedCopy::Always");
  // The truncating kind reads a K x N B K-major: only a transposing copy,
  // made on every launch, gives it that.
  CHECK_HAS(refusal(MmaKind::TF32Truncated_wgmma_m64k8),
            "reads 'B' K-major, but it is stored K x N and 'B' is staged with TmaCopies copied first "
            "only where its rows are ragged (PaddedCopy::WhereRowsAreRagged), which copy boxes as they lie");
}

TEST_CASE("the verifier refuses a TMA copy of a copy made only where the rows are ragged outside their test's else") {
  using coalesce::testing::internal_error_of;
  Gemm g = coalesce::testing::bf16_scheduled(where_ragged_tiling());
  Environment env = make_environment(g.out);
  Expr k_rows = Variable::make(Int(32), "K") % 8 == 0, n_rows = Variable::make(Int(32), "N") % 8 == 0;
  // Where A's rows are whole the copy has none (and a zeroed tensor map).
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(copy_of("A_padded"), env); }),
            "a TMA copy of 'A_padded', which is made only where the rows of 'A' are ragged, is not in the "
            "else-branch of the test that they are whole 16-byte multiples (K % 8 == 0)");
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(IfThenElse::make(k_rows, copy_of("A_padded")), env); }),
            "is not in the else-branch");
  CHECK_HAS(internal_error_of([&] {
              verify_tensor_copies(IfThenElse::make(n_rows, Evaluate::make(Expr(0)), copy_of("A_padded")), env);
            }),
            "is not in the else-branch");
  CHECK(internal_error_of([&] {
          verify_tensor_copies(IfThenElse::make(k_rows, copy_of("A"), copy_of("A_padded")), env);
        }) == "(no error)");
  // The input itself, still only under its test.
  CHECK_HAS(internal_error_of([&] { verify_tensor_copies(IfThenElse::make(n_rows, copy_of("A")), env); }),
            "a TMA copy of 'A' is not under the test");
}

TEST_CASE("a form no GPU has run is refused on the GPU until coalesce-gpu-check passes it") {
  // Copies made only where the rows are ragged have passed it: nothing listed.
  Gemm g = coalesce::testing::bf16_scheduled(where_ragged_tiling());
  GpuProgram program = Pipeline(g.out).gpu_program();
  CHECK(program.unverified_on_gpu.empty());
  unsetenv("COALESCE_ALLOW_UNVERIFIED");
  CHECK_NOTHROW(refuse_unverified_on_gpu(program, "run it on the GPU"));
  // A program that lists one is refused, naming it, unless the check asks.
  program.unverified_on_gpu = {"a form under test (coalesce-gpu-check --sections=mma checks it)"};
  CHECK_HAS(coalesce::testing::user_error_of([&] { refuse_unverified_on_gpu(program, "run it on the GPU"); }),
            "cannot run it on the GPU for 'out': it uses a form under test (coalesce-gpu-check --sections=mma "
            "checks it), which has not run on a GPU yet and stays refused until coalesce-gpu-check passes it there");
  setenv("COALESCE_ALLOW_UNVERIFIED", "1", 1);
  CHECK_NOTHROW(refuse_unverified_on_gpu(program, "run it on the GPU"));
  unsetenv("COALESCE_ALLOW_UNVERIFIED");
}
