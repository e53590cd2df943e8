// Swap-AB (MmaTiling::swap_ab; mma_tile on (jj, ii)): the tile's rows run
// along j, so B's rows (stored N x K, nn.Linear's weight) fill the
// instruction's M and A's rows its N. The instruction's first operand is
// then W, not A: the GPU back end gathers the factors' fragments by
// position, so tensorize_mma puts the row operand first, and
// verify_mma_operands fails a statement whose factors are the other way
// round (which computed the transposed product on the GPU while the CPU,
// running the update as written, got it right). Here: CPU numerics against
// the double reference at ragged shapes and the K = 1 / K = 3 pair on the
// warp and warpgroup MMA, the order of the factors in the nest, the PTX's
// K-major descriptors, the rules and the verifier's mutation.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"
#include "scheduler/VerifyMmaOperands.h"

#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::testing;

namespace {

enum class Path { WarpMma, WarpgroupTma, WarpgroupAsync, WarpgroupPadded };

/// The swapped tiling of each path: rows along N (warp_m of them per warp
/// or warpgroup), columns along M.
/// `columns`: the warpgroup tile's N (its rows of A), 64 or narrower.
MmaTiling swapped_tiling(MmaKind kind, Path path, int columns = 64) {
  MmaTiling t;
  t.kind = kind;
  t.swap_ab = true;
  if (is_warpgroup_mma(kind)) {
    t.block_m = columns;
    t.block_n = 128;
    t.warp_m = 64;
    t.warp_n = columns;
    t.k_step = 64;
    t.stages = 3;
    t.a_padding = t.b_padding = 0;
    t.tma = path != Path::WarpgroupAsync;
    t.tma_padded_copies = (path == Path::WarpgroupPadded) ? PaddedCopies::Both : PaddedCopies::None;
  } else {
    t.block_m = 64;
    t.block_n = 64;
    t.warp_m = 32;
    t.warp_n = 32;
  }
  return t;
}

struct Linear {
  Input A, W, bias;
  Func out;
};

/// out = gelu(A W^T + bias) on `t`.
Linear linear(const MmaTiling &t, bool w_stored_n_by_k = true) {
  Type in = mma_instruction(t.kind).operand;
  Param M("M"), N("N"), K("K");
  Linear l{Input("A", in, {M, K}), w_stored_n_by_k ? Input("W", in, {N, K}) : Input("W", in, {K, N}),
           Input("bias", Float(32), {N}), Func("out")};
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc");
  acc(i, j) = 0.0f;
  acc(i, j) += l.A(i, k) * (w_stored_n_by_k ? l.W(j, k) : l.W(k, j));
  l.out(i, j) = cast(in, gelu(acc(i, j) + l.bias(j)));
  schedule_gemm_mma(l.out, acc, l.A, l.W, i, j, k, t);
  return l;
}

double cpu_error(const MmaTiling &t, int M, int N, int K, bool w_stored_n_by_k = true) {
  Linear l = linear(t, w_stored_n_by_k);
  Type in = mma_instruction(t.kind).operand;
  Buffer a({M, K}, in), w(w_stored_n_by_k ? std::vector<int>{N, K} : std::vector<int>{K, N}, in), bias({N}),
      out({M, N}, in);
  a.fill_random(21);
  w.fill_random(22);
  bias.fill_random(23);
  out.poison();
  Pipeline(l.out).realize_on_cpu({{"A", a}, {"W", w}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}}, out);
  Buffer want({M, N}), got({M, N});
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double sum = 0;
      for (int kk = 0; kk < K; ++kk)
        sum += double(a.at(r, kk)) * double(w_stored_n_by_k ? w.at(c, kk) : w.at(kk, c));
      want(r, c) = float(examples::reference_epilogue<double>(examples::Epilogue::BiasGelu, sum, bias.get(size_t(c))));
      got(r, c) = out.at(r, c);
    }
  REQUIRE(examples::count_nan(got) == 0);
  return examples::relative_error(got, want);
}

struct Case {
  const char *name;
  MmaKind kind;
  Path path;
  int columns = 64;
  bool w_stored_n_by_k = true;
};

const Case kCases[] = {
    {"bf16 warp MMA", MmaKind::BF16_m16n8k16, Path::WarpMma},
    {"f16 warp MMA", MmaKind::F16_m16n8k16, Path::WarpMma},
    {"bf16 warpgroup MMA, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma},
    {"bf16 warpgroup MMA, cp.async", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupAsync},
    {"bf16 warpgroup MMA, padded copies", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupPadded},
    {"bf16 warpgroup MMA 64 x 16, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma, 16},
    {"f16 warpgroup MMA 64 x 8, cp.async", MmaKind::F16_wgmma_m64k16, Path::WarpgroupAsync, 8},
    {"bf16 warpgroup MMA 64 x 24, padded copies", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupPadded, 24},
    // B stored K x N: the instruction's first operand MN-major.
    {"bf16 warpgroup MMA, B stored K x N, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma, 64, false},
    {"f16 warpgroup MMA 64 x 16, B stored K x N, cp.async", MmaKind::F16_wgmma_m64k16, Path::WarpgroupAsync, 16, false},
    {"bf16 warpgroup MMA 64 x 8, B stored K x N, padded copies", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupPadded, 8,
     false},
};

} // namespace

TEST_CASE("swap-AB matches the double reference on the warp and warpgroup MMA, ragged and at K = 1 / K = 3") {
  for (const Case &c : kCases) {
    CAPTURE(c.name);
    bool whole_rows = c.path == Path::WarpgroupTma; // the TMA reads rows of whole 16 bytes (K's, or N's for K x N)
    std::vector<std::array<int, 3>> shapes = {{37, 200, whole_rows ? 136 : 75},
                                              {3, whole_rows && !c.w_stored_n_by_k ? 136 : 130, whole_rows ? 64 : 99}};
    if (!whole_rows) {
      shapes.push_back({5, 70, 1});
      shapes.push_back({5, 70, 3});
    }
    MmaTiling t = swapped_tiling(c.kind, c.path, c.columns);
    for (auto [M, N, K] : shapes) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(cpu_error(t, M, N, K, c.w_stored_n_by_k) < (mma_instruction(c.kind).operand == BFloat(16) ? 4e-3 : 1e-3));
    }
  }
}

TEST_CASE("the swapped instruction's first operand is W, both described K-major") {
  Pipeline p(linear(swapped_tiling(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma)).out);
  std::string nest = p.loop_nest();
  // The row operand first: W's tile indexed by the instruction's rows.
  CHECK_HAS(nest, "+ f32(W_shared[");
  CHECK_HAS(nest, "warpgroup_mma bf16 wgmma m64n64k16");
  std::string ptx = p.ptx();
  CHECK_HAS(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16");
  CHECK_HAS(ptx, "p, 1, 1, 0, 0;");
  CHECK(MmaTiling(swapped_tiling(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma)).str().find("swap-AB") !=
        std::string::npos);
}

TEST_CASE("with B stored K x N, the swapped instruction reads its first operand MN-major (its transpose flag)") {
  Pipeline p(linear(swapped_tiling(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma), false).out);
  std::string ptx = p.ptx();
  CHECK_HAS(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16");
  CHECK_HAS(ptx, "p, 1, 1, 1, 0;");
  CHECK(ptx.find("p, 1, 1, 0, 0;") == std::string::npos);
  Pipeline narrow(linear(swapped_tiling(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma, 16), false).out);
  GpuTarget target = parse_gpu_target("sm_90a");
  CHECK_HAS(narrow.ptx(target), "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16");
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(narrow.assemble(target));
}

TEST_CASE(
    "swap-AB's rules: B stored N x K on the warp MMA, 16-bit operands, rows and columns along one dimension each") {
  std::string stored_k_by_n = user_error_of(
      [] { Pipeline(linear(swapped_tiling(MmaKind::BF16_m16n8k16, Path::WarpMma), false).out).loop_nest(); });
  CHECK_HAS(stored_k_by_n, "whose fragments run along k: B must be stored N x K, read as W(j, k)");
  CHECK_HAS(stored_k_by_n, "use a warpgroup MMA (sm_90a)");
  MmaTiling tf32 = swapped_tiling(MmaKind::TF32_m16n8k8, Path::WarpMma);
  tf32.k_step = 16;
  std::string unverified = user_error_of([&] {
    Param M("M"), N("N"), K("K");
    Input A("A", Float(32), {M, K}), W("W", Float(32), {N, K});
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * W(j, k);
    out(i, j) = acc(i, j);
    schedule_gemm_mma(out, acc, A, W, i, j, k, tf32);
    Pipeline(out).loop_nest();
  });
  CHECK_HAS(unverified, "is unverified");
  // Both loops of the tile walking i: no operand's rows run along them.
  std::string both_along_i = user_error_of([] {
    Param M("M"), N("N");
    Var i("i"), j("j"), io("io"), ii("ii"), ii_o("ii_o"), ii_i("ii_i"), warp("warp"), lane("lane"), mi("mi"), nj("nj"),
        fi("fi"), fj("fj");
    Input A("A", BFloat(16), {M, N});
    Func out("out");
    out(i, j) = A(i, j);
    out.split(i, io, ii, 64).split(ii, ii_o, ii_i, 16).reorder({j, io, ii_o, ii_i});
    out.mma_tile(ii_o, ii_i, MmaKind::BF16_m16n8k16, 16, 8, warp, lane, mi, nj, fi, fj);
  });
  CHECK_HAS(both_along_i, "must each run along one dimension of 'out', a different one each");
}

TEST_CASE("after tensorize_mma, an MMA statement whose factors are the other way round is an internal error") {
  Expr m = Variable::make(Int(32), kMmaRow), n = Variable::make(Int(32), kMmaColumn);
  Expr k = Variable::make(Int(32), kMmaStep), lane = Variable::make(Int(32), "lane");
  Expr fi = Variable::make(Int(32), kMmaFragRow), fj = Variable::make(Int(32), kMmaFragColumn);
  auto update = [&](bool rows_first) {
    Expr rows = Cast::make(Float(32), Load::make(BFloat(16), "W_shared", {m, k}));
    Expr columns = Cast::make(Float(32), Load::make(BFloat(16), "A_shared", {n + (lane % 4) * 0, k}));
    Expr acc = Load::make(Float(32), "acc", {lane, fi, fj});
    return Store::make("acc", {lane, fi, fj},
                       Add::make(acc, rows_first ? Mul::make(rows, columns) : Mul::make(columns, rows)));
  };
  CHECK(internal_error_of([&] { verify_mma_operands(WarpMma::make(MmaKind::BF16_m16n8k16, lane, update(true))); }) ==
        "(no error)");
  CHECK_HAS(internal_error_of([&] { verify_mma_operands(WarpMma::make(MmaKind::BF16_m16n8k16, lane, update(false))); }),
            "reads its first factor along the instruction's columns");
}

TEST_CASE("swapped warpgroup tiles, 64 and 16 columns wide, assemble for sm_90a without spills or injected waits") {
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping");
    return;
  }
  for (int columns : {64, 16}) {
    CAPTURE(columns);
    MmaTiling t = swapped_tiling(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma, columns);
    Pipeline pipeline(linear(t).out);
    GpuTarget target = parse_gpu_target("sm_90a");
    CHECK_HAS(pipeline.ptx(target), str_cat("wgmma.mma_async.sync.aligned.m64n", columns, "k16.f32.bf16.bf16"));
    PtxasResult assembled = pipeline.assemble(target);
    coalesce::testing::check_assembled_cleanly(assembled);
    MESSAGE(t.str(), ": ", assembled.kernels.front().registers, " registers");
  }
}

TEST_CASE("for a W stored N x K and a few rows of x, the default is swap-AB, and it matches the reference") {
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 1, 4096, 4096, 132);
  swap_ab_where_rows_are_few(t, 1, 4096, 4096, 132);
  CHECK(t.swap_ab);
  CHECK(t.block_m == 8);
  CHECK(t.warp_n == 8);
  CHECK(t.block_n == 64);
  CHECK(t.k_step == 128);
  CHECK(t.stages == 6);
  CHECK(t.split_k == 4); // 64 tiles on 264 slots
  MmaTiling wide = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 16, 11008, 4096, 132);
  swap_ab_where_rows_are_few(wide, 16, 11008, 4096, 132);
  CHECK(wide.block_m == 16);
  CHECK(wide.stages == 5);
  CHECK(wide.split_k == 1); // 172 tiles
  // Not where M fills more rows, nor for other operand widths.
  MmaTiling square = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 64, 4096, 4096, 132);
  swap_ab_where_rows_are_few(square, 64, 4096, 4096, 132);
  CHECK(square.swap_ab);
  CHECK(square.warp_n == 64);
  CHECK(square.stages == 3);
  CHECK(square.split_k == 4);
  // 64 rows whose swapped tiles fill the wave without a split: not swapped.
  MmaTiling filled = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 64, 11008, 4096, 132);
  swap_ab_where_rows_are_few(filled, 64, 11008, 4096, 132);
  CHECK_FALSE(filled.swap_ab);
  for (int64_t M : {65, 128, 4096}) {
    MmaTiling many = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, M, 4096, 4096, 132);
    swap_ab_where_rows_are_few(many, M, 4096, 4096, 132);
    CHECK_FALSE(many.swap_ab);
  }
  MmaTiling tf32 = default_mma_tiling(MmaKind::TF32_wgmma_m64k8, 1, 4096, 4096, 132);
  swap_ab_where_rows_are_few(tf32, 1, 4096, 4096, 132);
  CHECK_FALSE(tf32.swap_ab);
  // The default for a ragged decode-like shape runs right on the CPU.
  MmaTiling ragged = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 3, 130, 264, 132);
  swap_ab_where_rows_are_few(ragged, 3, 130, 264, 132);
  REQUIRE(ragged.swap_ab);
  CHECK(cpu_error(ragged, 3, 130, 264) < 4e-3);
  CHECK(cpu_error(ragged, 3, 130, 1) < 4e-3);
  CHECK(cpu_error(ragged, 3, 130, 3) < 4e-3);
}
