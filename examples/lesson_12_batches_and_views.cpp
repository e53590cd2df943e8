// Lesson 12: a batch of inputs through one linear layer, read where they lie.
//
// A transformer's activations are often a batch of sequences, and the part
// a layer reads is a slice of a wider tensor: here x[b][:, :K] of a
// batch x M x lda buffer (the rest of each row belongs to something else).
// The algorithm says both, and nothing is copied:
//
//   - a batch dimension before the product's two: acc(b, i, j) += x(b, i, k)
//     * W(j, k). W has no b: one nn.Linear weight for the whole batch (a
//     batch stride of 0);
//   - x declared as a view with strides: Input("x", bf16, {B, M, K},
//     {M * lda, lda, 1}), its rows lda elements apart.
//
// The schedule is the usual one, schedule_gemm_mma; the batch becomes the
// grid's third block dimension, and the copies read x's rows at their
// strides (16-byte vectors and the TMA where every row starts a whole 16
// bytes in, element copies where not). On the CPU the MMA statements run
// lane by lane; this lesson checks them against the double reference at a
// ragged shape, at K = 1 and K = 3, with a leading dimension that is a
// whole 16 bytes and one that is not. (On a GPU, coalesce-gpu-check
// --sections=batched,strided checks the same forms; see
// docs/schedule_language.md.)

#include "dsl/recipes/GemmMmaSchedule.h"
#include "examples/LessonSupport.h"

#include <limits>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

struct BatchedLinear {
  Input x, W, b;
  Func y;
};

BatchedLinear batched_linear() {
  Param batch("B"), M("M"), N("N"), K("K"), lda("lda");
  BatchedLinear l{Input("x", BFloat(16), {batch, M, K}, {M * lda, lda, 1}), Input("W", BFloat(16), {N, K}),
                  Input("b", Float(32), {N}), Func("y")};
  Var s("s"), i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc");
  acc(s, i, j) = 0.0f;
  acc(s, i, j) += l.x(s, i, k) * l.W(j, k);
  l.y(s, i, j) = cast(BFloat(16), gelu(acc(s, i, j) + l.b(j)));
  schedule_gemm_mma(l.y, acc, l.x, l.W, i, j, k, default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 4096, 4096, 4096, 132));
  return l;
}

bool check(Pipeline &pipeline, int batch, int M, int N, int K, int lda) {
  // x's buffer: batch x M rows of lda elements, the view's K of each row
  // random, the rest NaN (read one, and the output shows it).
  Buffer x({batch, M, lda}, BFloat(16)), W({N, K}, BFloat(16)), b({N}), y({batch, M, N}, BFloat(16));
  W.fill_random(2);
  b.fill_random(3);
  Buffer values({batch, M, K}, BFloat(16));
  values.fill_random(1);
  for (size_t e = 0; e < x.size(); ++e)
    x.set(e, std::numeric_limits<float>::quiet_NaN());
  for (int s = 0; s < batch; ++s)
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k)
        x.set((size_t(s) * M + i) * lda + k, values.get((size_t(s) * M + i) * K + k));
  y.poison();
  pipeline.realize_on_cpu({{"x", x}, {"W", W}, {"b", b}, {"B", batch}, {"M", M}, {"N", N}, {"K", K}, {"lda", lda}}, y);
  Buffer got({batch * M, N}), want({batch * M, N});
  for (int s = 0; s < batch; ++s)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double sum = 0;
        for (int k = 0; k < K; ++k)
          sum += double(values.get((size_t(s) * M + i) * K + k)) * double(W.at(j, k));
        want(s * M + i, j) = float(reference_epilogue<double>(Epilogue::BiasGelu, sum, b.get(size_t(j))));
        got(s * M + i, j) = y.get((size_t(s) * M + i) * N + j);
      }
  std::string what = "batch " + std::to_string(batch) + ", lda " + std::to_string(lda);
  return bf16_output_matches(M, N, K, got, want, what.c_str());
}

} // namespace

int main() {
  return run_lesson([] {
    BatchedLinear l = batched_linear();
    Pipeline pipeline(l.y);
    print_loop_nest("y(s, i, j) = gelu(x(s, i, :) . W(j, :) + b(j)), x a view, one W for the batch", pipeline);
    bool ok = true;
    // Ragged, then K = 1 and K = 3 (an epilogue inside the reduction would
    // agree at K = 1 only); lda a whole 16 bytes (8 bf16) past K, or not.
    for (auto [M, N, K] : {std::tuple{70, 75, 37}, std::tuple{67, 45, 1}, std::tuple{67, 45, 3}})
      for (int extra : {8 - K % 8 + 8, 3})
        ok &= check(pipeline, 3, M, N, K, K + extra);
    return ok;
  });
}
