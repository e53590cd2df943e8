// Lesson 10: an FP8 linear layer, y = bf16(gelu((x W^T) * sx(i) * sw(j) + b(j))).
//
// FP8 checkpoints store x and W in e4m3 (4 exponent bits, 3 mantissa bits,
// largest value 448) with a scale per row of x and per output channel of W
// that brings each row back to its real range. The algorithm says all of it:
//   acc(i, j) += x(i, k) * W(j, k);      the e4m3 products, summed in f32
//   y(i, j) = bf16(gelu(acc(i, j) * sx(i) * sw(j) + b(j)));
// The scales are applied once, after the whole sum, as the bias and GELU
// are: an epilogue inside the reduction would scale each partial sum.
//
// The schedule is the warpgroup one of lesson 8 with the 8-bit instruction
// (e4m3 wgmma, k 32): both operands K-major, as the instruction reads them
// and as W is stored; a k step is one 128-byte swizzled row, 128 values.
// On an H200 the same kernel runs at about 1,000 TFLOP/s, 1.7 times the
// bf16 layer (docs/performance.md); here, on the CPU, the same MMA
// statements run lane by lane, checked against the double reference at a
// ragged shape and at K = 1 and K = 3.

#include "examples/LessonSupport.h"
#include "dsl/recipes/GemmMmaSchedule.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

struct Fp8Linear {
  Input x, W, sx, sw, b;
  Func y;
};

Fp8Linear fp8_linear_layer() {
  Param M("M"), N("N"), K("K");
  Fp8Linear l{Input("x", Float8E4M3(), {M, K}), Input("W", Float8E4M3(), {N, K}), Input("sx", Float(32), {M}),
              Input("sw", Float(32), {N}),      Input("b", Float(32), {N}),        Func("y")};
  Var i("i"), j("j");
  RDom k(0, K, "k");
  Func acc("acc");
  acc(i, j) = 0.0f;
  acc(i, j) += l.x(i, k) * l.W(j, k);
  l.y(i, j) = cast(BFloat(16), gelu(acc(i, j) * l.sx(i) * l.sw(j) + l.b(j)));
  // The library's tiling for a 4096 x 4096 layer on an H200, its copies of
  // x and W padded first so that any K runs (the TMA reads rows of whole
  // 16-byte multiples only).
  MmaTiling tiling = default_mma_tiling(MmaKind::E4M3_wgmma_m64k32, 4096, 4096, 4096, 132);
  tiling.tma_padded_copies = PaddedCopies::Both;
  schedule_gemm_mma(l.y, acc, l.x, l.W, i, j, k, tiling);
  return l;
}

bool check(Pipeline &pipeline, int M, int N, int K) {
  Buffer x({M, K}, Float8E4M3()), W({N, K}, Float8E4M3()), sx({M}), sw({N}), b({N}), y({M, N}, BFloat(16));
  x.fill_random(1); // values in [-1, 1), each exactly an e4m3
  W.fill_random(2);
  b.fill_random(3);
  for (int i = 0; i < M; ++i)
    sx.set(size_t(i), 0.25f + 0.125f * float(i % 5));
  for (int j = 0; j < N; ++j)
    sw.set(size_t(j), 4.0f - 0.5f * float(j % 3));
  y.poison();
  pipeline.realize_on_cpu({{"x", x}, {"W", W}, {"sx", sx}, {"sw", sw}, {"b", b}, {"M", M}, {"N", N}, {"K", K}}, y);
  Buffer got({M, N}), want({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0; // the e4m3 values widen exactly
      for (int k = 0; k < K; ++k)
        sum += double(x.at(i, k)) * double(W.at(j, k));
      want(i, j) = float(reference_epilogue<double>(Epilogue::BiasGelu, sum * sx.get(size_t(i)) * sw.get(size_t(j)),
                                                    b.get(size_t(j))));
      got(i, j) = y.at(i, j);
    }
  return bf16_output_matches(M, N, K, got, want);
}

// Ragged, then K = 1 and K = 3: scales or an activation applied inside the
// reduction would agree at K = 1 only.
const int kShapes[][3] = {{70, 75, 37}, {67, 45, 1}, {67, 45, 3}};

} // namespace

int main() {
  return run_lesson([] {
    Fp8Linear l = fp8_linear_layer();
    Pipeline pipeline(l.y);
    print_loop_nest("y = gelu(x W^T * sx * sw + b) on the e4m3 warpgroup MMA", pipeline);
    bool ok = true;
    for (const auto &shape : kShapes)
      ok &= check(pipeline, shape[0], shape[1], shape[2]);
    return ok;
  });
}
