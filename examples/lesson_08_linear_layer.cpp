// Lesson 8: a linear layer as PyTorch stores it, y = gelu(x W^T + b).
//
// nn.Linear keeps its weight as W[N][K] (out_features x in_features, K
// contiguous) and computes x W^T + b. The algorithm says so by how it reads
// the weight, W(j, k) instead of B(k, j):
//   acc(i, j) += x(i, k) * W(j, k);  y(i, j) = bf16(gelu(acc(i, j) + b(j))).
// The schedule does not change: schedule_gemm_mma with the library's tiling
// for the shape. The compiler stages W's tiles as they lie, [n][k], which is
// what the tensor cores read best: the warp MMA loads them with ldmatrix
// without .trans, the warpgroup MMA (Hopper) describes them K-major, as it
// does A's, and the TMA copies W's boxes as they are in memory. No copy of
// the weight is transposed first.
//
// On the CPU the same MMA statements run, lane by lane; this lesson checks
// them against the double reference at a ragged shape and at K = 1 and
// K = 3, for the warp MMA and the warpgroup MMA.

#include "examples/LessonSupport.h"
#include "dsl/recipes/GemmMmaSchedule.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

struct Linear {
  Input x, W, b;
  Func y;
};

Linear linear_layer(MmaKind kind) {
  Param M("M"), N("N"), K("K");
  Linear l{Input("x", BFloat(16), {M, K}), Input("W", BFloat(16), {N, K}), Input("b", Float(32), {N}), Func("y")};
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc");
  acc(i, j) = 0.0f;
  acc(i, j) += l.x(i, k) * l.W(j, k);
  l.y(i, j) = cast(BFloat(16), gelu(acc(i, j) + l.b(j)));
  // The library's tiling for a 4096 x 4096 layer on an H200 (132 SMs).
  schedule_gemm_mma(l.y, acc, l.x, l.W, i, j, k, default_mma_tiling(kind, 4096, 4096, 4096, 132));
  return l;
}

// Runs on the CPU and compares with the double reference of x W^T + b.
bool check(Pipeline &pipeline, int M, int N, int K, const char *what) {
  Buffer x({M, K}, BFloat(16)), W({N, K}, BFloat(16)), b({N}), y({M, N}, BFloat(16));
  x.fill_random(1);
  W.fill_random(2);
  b.fill_random(3);
  y.poison();
  pipeline.realize_on_cpu({{"x", x}, {"W", W}, {"b", b}, {"M", M}, {"N", N}, {"K", K}}, y);
  Buffer got({M, N}), want({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0;
      for (int k = 0; k < K; ++k)
        sum += double(x.at(i, k)) * double(W.at(j, k));
      want(i, j) = float(reference_epilogue<double>(Epilogue::BiasGelu, sum, b.get(size_t(j))));
      got(i, j) = y.at(i, j);
    }
  return bf16_output_matches(M, N, K, got, want, what);
}

// Ragged (K not a multiple of the k step), then K = 1 and K = 3: an
// epilogue inside the reduction would agree at K = 1 only.
const int kShapes[][3] = {{70, 75, 37}, {67, 45, 1}, {67, 45, 3}};

} // namespace

int main() {
  return run_lesson([] {
    bool ok = true;
    for (auto [kind, what] : {std::pair{MmaKind::BF16_m16n8k16, "warp MMA"},
                              std::pair{MmaKind::BF16_wgmma_m64k16, "warpgroup MMA"}}) {
      Linear l = linear_layer(kind);
      Pipeline pipeline(l.y);
      if (kind == MmaKind::BF16_wgmma_m64k16)
        print_loop_nest("y = gelu(x W^T + b) on the warpgroup MMA, W stored N x K", pipeline);
      for (const auto &shape : kShapes)
        ok &= check(pipeline, shape[0], shape[1], shape[2], what);
    }
    return ok;
  });
}
