// A B stored N x K, as nn.Linear keeps its weight: acc(i, j) += A(i, k) *
// W(j, k) on every tensor-core path. The warp MMA reads its fragments with
// ldmatrix without .trans; the warpgroup MMA describes W's tiles K-major
// (as A's) and the TMA copies W's boxes as they lie; tf32 needs no
// transposing copy of W. On the CPU, which runs the statements the GPU
// runs, against the double reference at ragged shapes and the K = 1 / K = 3
// pair; the nests and the PTX for the layout; the legality rule on a ragged
// K that names W's dimension.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "ErrorCapture.h"
#include "dsl/NarrowFloat.h"
#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::testing;

namespace {

#define CHECK_LACKS(text, part)                                                                                 \
  do {                                                                                                         \
    const std::string coalesce_check_lacks_text_ = (text);                                                     \
    CHECK_MESSAGE(coalesce_check_lacks_text_.find(part) == std::string::npos, "present: " << (part));          \
  } while (false)

/// How a case copies its tiles.
enum class Path { WarpMma, WarpgroupTma, WarpgroupAsync, WarpgroupPadded };

struct Linear {
  Input A, W, bias;
  Func out;
};

/// out = gelu(A W^T + bias), scheduled by schedule_gemm_mma with the
/// default tiling of `kind` for 4096^3 and `path`'s copies.
Linear linear(MmaKind kind, Path path, int64_t K_extent_of_W = 0) {
  Type in = mma_instruction(kind).operand;
  Param M("M"), N("N"), K("K");
  Linear l{Input("A", in, {M, K}), Input("W", in, {N, K_extent_of_W ? Expr(int(K_extent_of_W)) : Expr(K)}),
           Input("bias", Float(32), {N}), Func("out")};
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc");
  acc(i, j) = 0.0f;
  acc(i, j) += l.A(i, k) * l.W(j, k);
  l.out(i, j) = cast(in, gelu(acc(i, j) + l.bias(j)));
  MmaTiling t = default_mma_tiling(kind, 4096, 4096, 132);
  if (is_warpgroup_mma(kind)) {
    t.tma = path != Path::WarpgroupAsync;
    t.tma_padded_copies = (path == Path::WarpgroupPadded) ? PaddedCopies::Both : PaddedCopies::None;
    t.tile_stores = TileStores::Direct;
  }
  schedule_gemm_mma(l.out, acc, l.A, l.W, i, j, k, t);
  return l;
}

/// ||out - ref|| / ||ref|| on the CPU at M x N x K, ref in double on the
/// operands as the instruction multiplies them.
double cpu_error(MmaKind kind, Path path, int M, int N, int K) {
  Linear l = linear(kind, path);
  Type in = mma_instruction(kind).operand;
  bool tf32 = mma_rounds_to_tf32(kind);
  Buffer a({M, K}, in), w({N, K}, in), bias({N}), out({M, N}, in);
  a.fill_random(11);
  w.fill_random(12);
  bias.fill_random(13);
  out.poison();
  Pipeline(l.out).realize_on_cpu({{"A", a}, {"W", w}, {"bias", bias}, {"M", M}, {"N", N}, {"K", K}}, out);
  auto operand = [&](float v) { return double(tf32 ? float_to_tf32(v) : v); };
  Buffer want({M, N}), got({M, N});
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double sum = 0;
      for (int kk = 0; kk < K; ++kk)
        sum += operand(a.at(r, kk)) * operand(w.at(c, kk));
      want(r, c) = float(examples::reference_epilogue<double>(examples::Epilogue::BiasGelu, sum, bias.get(size_t(c))));
      got(r, c) = out.at(r, c);
    }
  REQUIRE(examples::count_nan(got) == 0);
  return examples::relative_error(got, want);
}

/// One rounding of the output (bf16: 2^-8, f16: 2^-11), or f32 sums.
double tolerance(MmaKind kind) {
  Type in = mma_instruction(kind).operand;
  return in == BFloat(16) ? 4e-3 : in == Float(16) ? 1e-3 : 1e-5;
}

struct Case {
  const char *name;
  MmaKind kind;
  Path path;
};

const Case kCases[] = {
    {"bf16 warp MMA", MmaKind::BF16_m16n8k16, Path::WarpMma},
    {"f16 warp MMA", MmaKind::F16_m16n8k16, Path::WarpMma},
    {"tf32 warp MMA", MmaKind::TF32_m16n8k8, Path::WarpMma},
    {"bf16 warpgroup MMA, TMA", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma},
    {"f16 warpgroup MMA, TMA", MmaKind::F16_wgmma_m64k16, Path::WarpgroupTma},
    {"bf16 warpgroup MMA, cp.async", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupAsync},
    {"bf16 warpgroup MMA, padded copies", MmaKind::BF16_wgmma_m64k16, Path::WarpgroupPadded},
    {"tf32 warpgroup MMA, padded copies", MmaKind::TF32_wgmma_m64k8, Path::WarpgroupPadded},
};

} // namespace

TEST_CASE("A W^T with W stored N x K matches the double reference on every tensor-core path") {
  for (const Case &c : kCases) {
    CAPTURE(c.name);
    // The TMA reads W as it lies: its rows (K) must be whole 16-byte
    // multiples, so K is a multiple of 8 there; elsewhere K is ragged, and
    // the K = 1 / 3 pair tells an epilogue inside the reduction apart.
    bool whole_rows = c.path == Path::WarpgroupTma;
    std::vector<std::array<int, 3>> shapes = {{67, 136, whole_rows ? 96 : 100}, {131, 264, whole_rows ? 200 : 67}};
    if (!whole_rows) {
      shapes.push_back({67, 45, 1});
      shapes.push_back({67, 45, 3});
    }
    for (auto [M, N, K] : shapes) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CHECK(cpu_error(c.kind, c.path, M, N, K) < tolerance(c.kind));
    }
  }
}

TEST_CASE("the warpgroup MMA describes W's tiles K-major and the TMA copies W's boxes as they lie") {
  Pipeline p(linear(MmaKind::BF16_wgmma_m64k16, Path::WarpgroupTma).out);
  std::string nest = p.loop_nest();
  // 128 x 256 tiles: W's tile is 256 rows of n, k along them, as A's.
  CHECK_HAS(nest, "allocate W_shared[4][1][256][64] bf16 in shared");
  CHECK_HAS(nest, "tensor_copy W[bj*256, 0] box 256x64");
  CHECK_HAS(nest, "B: leading 16 B, stride 1024 B");
  CHECK_LACKS(nest, "mn-major");
  // Both operands K-major: no transpose immediates.
  std::string ptx = p.ptx();
  CHECK_HAS(ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
  CHECK_HAS(ptx, "p, 1, 1, 0, 0;");
  CHECK_LACKS(ptx, "p, 1, 1, 0, 1;");
}

TEST_CASE("a tf32 W stored N x K is copied as it lies, not transposed") {
  std::string nest = Pipeline(linear(MmaKind::TF32_wgmma_m64k8, Path::WarpgroupPadded).out).loop_nest();
  CHECK_HAS(nest, "B: leading 16 B, stride 1024 B");
  CHECK_LACKS(nest, "transpose");
}

TEST_CASE("the warp MMA reads W's fragments with ldmatrix without .trans") {
  std::string ptx = Pipeline(linear(MmaKind::BF16_m16n8k16, Path::WarpMma).out).ptx();
  CHECK_HAS(ptx, "ldmatrix.sync.aligned.m8n8.x2.shared.b16");
  CHECK_LACKS(ptx, "ldmatrix.sync.aligned.m8n8.x2.trans");
}

TEST_CASE("a ragged K needs W to end along k where the reduction does, and the message names W's dimension 1") {
  std::string message = user_error_of([] { Pipeline(linear(MmaKind::BF16_m16n8k16, Path::WarpMma, 4104).out).loop_nest(); });
  CHECK_HAS(message, "'W' extends to 4104 along k (dimension 1)");
}
