// An A stored K x M (column-major, M-major): acc(i, j) += A(k, i) * B(k, j)
// or * W(j, k), on every path. The 16-bit warpgroup MMA reads A's tiles
// MN-major (its transpose flag for A, the TMA copying A's boxes as they
// lie); tf32's warpgroup MMA reads K-major only, so the compiler stores A's
// tiles transposed (as it does B's); the warp MMA reads A's fragments with
// ldmatrix .trans (tf32's element by element); FFMA reads any layout. On the CPU, which runs the
// statements the GPU runs: each schedule gives the bits of the same
// schedule reading A(i, k) from a transposed copy, at ragged shapes and K =
// 0 / 1 / 3, and the double reference; the nests and the PTX; the rules
// that name A's layout.

#include "AssembledCleanly.h"
#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::testing;

namespace {

/// How a case copies its tiles onto which instruction.
enum class Path { Ffma, WarpMma, WarpgroupAsync, WarpgroupTma, WarpgroupPadded };

struct Case {
  const char *name;
  MmaKind kind; ///< MmaKind::None: FFMA
  Path path;
};

const Case kCases[] = {
    {"f32 FFMA", MmaKind::None, Path::Ffma},
    {"bf16 warp MMA", MmaKind::BF16_m16n8k16, Path::WarpMma},
    {"tf32 warp MMA", MmaKind::TF32_m16n8k8, Path::WarpMma},
    {"bf16 warpgroup MMA, cp.async", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupAsync},
    {"f16 warpgroup MMA, TMA", MmaKind::F16_wgmma_m64k16, Path::WarpgroupTma},
    {"bf16 warpgroup MMA, padded copies", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupPadded},
    {"tf32 warpgroup MMA, cp.async", MmaKind::TF32_wgmma_m64k8, Path::WarpgroupAsync},
    {"tf32 warpgroup MMA, padded copies", MmaKind::TF32_wgmma_m64k8, Path::WarpgroupPadded},
};

Type input_type(const Case &c) { return c.kind == MmaKind::None ? Float(32) : mma_instruction(c.kind).operand; }
Type output_type(const Case &c) { return c.kind == MmaKind::None ? Float(32) : BFloat(16); }

/// out = gelu(A B + bias) with A read A(k, i) (stored K x M) or A(i, k),
/// and B read B(k, j) or W(j, k); the case's schedule.
struct LayoutGemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, B, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};
  LayoutGemm(const Case &c, bool a_km, bool b_nk, int64_t a_k_extent = 0)
      : A("A", input_type(c),
          a_km ? std::vector<Expr>{a_k_extent ? Expr(int(a_k_extent)) : Expr(K), M} : std::vector<Expr>{M, K}),
        B("B", input_type(c), b_nk ? std::vector<Expr>{N, K} : std::vector<Expr>{K, N}) {
    acc(i, j) = 0.0f;
    acc(i, j) += (a_km ? A(k, i) : A(i, k)) * (b_nk ? B(j, k) : B(k, j));
    out(i, j) = cast(output_type(c), gelu(acc(i, j) + bias(j)));
    if (c.path == Path::Ffma) {
      schedule_gemm(out, acc, A, B, i, j, k, default_gemm_tiling(0, 0, 0, 132));
      return;
    }
    MmaTiling t = default_mma_tiling(c.kind, 4096, 4096, 132);
    if (is_warpgroup_mma(c.kind)) {
      t.tma = c.path != Path::WarpgroupAsync;
      t.tma_padded_copies = (c.path == Path::WarpgroupPadded) ? PaddedCopies::Both : PaddedCopies::None;
    }
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
  }
};

struct Outputs {
  Buffer km, mk; ///< A read as stored K x M, and read A(i, k) from the transposed copy
  Buffer a_mk, b, bias;
};

Outputs run_both(const Case &c, bool b_nk, int M, int N, int K) {
  LayoutGemm km(c, true, b_nk), mk(c, false, b_nk);
  Type in = input_type(c);
  Outputs o{Buffer({M, N}, output_type(c)), Buffer({M, N}, output_type(c)), Buffer({M, K}, in),
            Buffer(b_nk ? std::vector<int>{N, K} : std::vector<int>{K, N}, in), Buffer({N})};
  Buffer a_km({K, M}, in);
  a_km.fill_random(31);
  o.b.fill_random(32);
  o.bias.fill_random(33);
  for (int r = 0; r < M; ++r)
    for (int q = 0; q < K; ++q)
      o.a_mk.set(size_t(r) * K + q, a_km.get(size_t(q) * M + r));
  o.km.poison();
  o.mk.poison();
  Pipeline(km.out).realize_on_cpu({{"A", a_km}, {"B", o.b}, {"bias", o.bias}, {"M", M}, {"N", N}, {"K", K}}, o.km);
  Pipeline(mk.out).realize_on_cpu({{"A", o.a_mk}, {"B", o.b}, {"bias", o.bias}, {"M", M}, {"N", N}, {"K", K}}, o.mk);
  return o;
}

size_t nans(const Buffer &b) {
  size_t n = 0;
  for (size_t e = 0; e < b.size(); ++e)
    n += std::isnan(b.get(e)) ? 1 : 0;
  return n;
}

#define CHECK_LACKS(text, part)                                                                                        \
  do {                                                                                                                 \
    const std::string coalesce_check_lacks_text_ = (text);                                                             \
    CHECK_MESSAGE(coalesce_check_lacks_text_.find(part) == std::string::npos, "present: " << (part));                  \
  } while (false)

} // namespace

TEST_CASE("A stored K x M gives the bits of A(i, k) from a transposed copy on every path, both B layouts") {
  for (const Case &c : kCases)
    for (bool b_nk : {false, true}) {
      CAPTURE(c.name);
      CAPTURE(b_nk);
      // Ragged everywhere (A's rows of 70 elements are no whole 16 bytes:
      // the TMA's kernels take their cp.async copies), then rows the TMA
      // reads, then the K = 0 / 1 / 3 cases.
      for (auto [M, N, K] :
           std::vector<std::array<int, 3>>{{70, 75, 37}, {128, 72, 64}, {67, 45, 0}, {67, 45, 1}, {67, 45, 3}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        Outputs o = run_both(c, b_nk, M, N, K);
        CHECK(nans(o.km) == 0);
        CHECK(same_bits(o.km, o.mk));
      }
    }
}

TEST_CASE("A stored K x M against the double reference") {
  const Case c{"bf16 warpgroup MMA, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma};
  const int M = 136, N = 72, K = 48;
  Outputs o = run_both(c, false, M, N, K);
  double diff = 0, norm = 0;
  for (int r = 0; r < M; ++r)
    for (int col = 0; col < N; ++col) {
      double sum = o.bias.get(size_t(col));
      for (int q = 0; q < K; ++q)
        sum += double(o.a_mk.get(size_t(r) * K + q)) * o.b.get(size_t(q) * N + col);
      double want = 0.5 * sum * (1 + std::erf(sum / std::sqrt(2.0))), d = o.km.get(size_t(r) * N + col) - want;
      diff += d * d;
      norm += want * want;
    }
  CHECK(std::sqrt(diff / norm) < 4e-3);
}

TEST_CASE(
    "the 16-bit warpgroup MMA reads A's tiles MN-major with its transpose flag; the TMA copies them as they lie") {
  const Case c{"bf16 warpgroup MMA, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma};
  Pipeline km(LayoutGemm(c, true, true).out), mk(LayoutGemm(c, false, true).out);
  std::string nest = km.loop_nest();
  // A's tile is 64 rows of k, 128 elements of m along each, in two boxes
  // of 64: one 128-byte swizzled atom each.
  CHECK_HAS(nest, "tensor_copy A[0, bi*128] box 64x64");
  CHECK_HAS(nest, "tensor_copy A[0, bi*128 + 64] box 64x64");
  // Each warpgroup's 64 rows of m are one atom: 8 rows of k per 1024 bytes.
  CHECK_HAS(nest, "(A: stride 1024 B, mn-major; B: leading 16 B, stride 1024 B;");
  // The instruction's last two immediates are A's and B's transpose flags.
  std::string ptx = km.ptx(), plain = mk.ptx();
  CHECK_HAS(ptx, "p, 1, 1, 1, 0;");
  CHECK_LACKS(ptx, "p, 1, 1, 0, 0;");
  CHECK_HAS(plain, "p, 1, 1, 0, 0;");
  if (ptxas_available())
    check_assembled_cleanly(km.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("tf32's warpgroup MMA reads K-major only: the compiler stores A's tiles transposed") {
  const Case c{"tf32 warpgroup MMA, cp.async", MmaKind::TF32_wgmma_m64k8, Path::WarpgroupAsync};
  Pipeline km(LayoutGemm(c, true, true).out);
  std::string nest = km.loop_nest();
  CHECK_HAS(nest, "A_shared");
  CHECK_LACKS(nest, "mn-major");
  std::string ptx = km.ptx();
  CHECK_HAS(ptx, "p, 1, 1;");
  if (ptxas_available())
    check_assembled_cleanly(km.assemble(parse_gpu_target("sm_90a")));
}

TEST_CASE("the warp MMA reads A's fragments with ldmatrix .trans where A is stored K x M, and assembles cleanly") {
  const Case bf16{"bf16 warp MMA", MmaKind::BF16_m16n8k16, Path::WarpMma};
  std::string km = Pipeline(LayoutGemm(bf16, true, false).out).ptx(),
              mk = Pipeline(LayoutGemm(bf16, false, false).out).ptx();
  CHECK_HAS(km, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
  CHECK_LACKS(km, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
  CHECK_HAS(mk, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
  CHECK_LACKS(mk, "ldmatrix.sync.aligned.m8n8.x4.trans");
  if (!ptxas_available()) {
    MESSAGE("ptxas not found: skipping the assembly");
    return;
  }
  for (MmaKind kind : {MmaKind::BF16_m16n8k16, MmaKind::TF32_m16n8k8}) {
    const Case c{"warp MMA", kind, Path::WarpMma};
    check_assembled_cleanly(Pipeline(LayoutGemm(c, true, false).out).assemble(parse_gpu_target("sm_80")));
  }
}

TEST_CASE("A's layout in the rules: FP8 reads A K-major, a ragged K names A's dimension 0") {
  {
    Param M("M"), N("N"), K("K");
    Input A("A", Float8E4M3(), {K, M}), W("W", Float8E4M3(), {N, K});
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += A(k, i) * W(j, k);
    out(i, j) = cast(BFloat(16), acc(i, j));
    MmaTiling t = default_mma_tiling(MmaKind::E4M3_wgmma_m64k32, 4096, 4096, 132);
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
    std::string message = user_error_of([&] { Pipeline(out).loop_nest(); });
    CHECK_HAS(message, "reads both operands K-major, but 'A' is read as A(k, i), stored K x M");
  }
  const Case c{"bf16 warp MMA", MmaKind::BF16_m16n8k16, Path::WarpMma};
  std::string message = user_error_of([&] { Pipeline(LayoutGemm(c, true, false, 4104).out).loop_nest(); });
  CHECK_HAS(message, "'A' extends to 4104 along k (dimension 0)");
}
