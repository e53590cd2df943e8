// A user's own generator, built with coalesce_add_generator() from the
// installed package and compiled by the installed coalesce-aot
// (--generator-library): an MLP layer's linear step with SiLU and a
// residual, nn.Linear's weight layout,
//
//   out(i, j) = bf16(silu(x(i, k) W(j, k) summed over k + bias(j)) + residual(i, j))
//
// on the warpgroup MMA for sm_90a and the warp MMA elsewhere, with the
// library's tiling for the shape (--tile-M/--tile-N pick it; the sizes
// themselves are passed at run time unless fixed with --M, --N, --K).

#include "dsl/Activations.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "runtime/aot/Generator.h"

using namespace coalesce;

namespace {

class SiluResidualLinear : public Generator {
public:
  SizeParam M{this, "M", "rows of x, residual and out"};
  SizeParam N{this, "N", "rows of W: columns of out"};
  SizeParam K{this, "K", "columns of x and W"};
  GeneratorParam<int> tile_m{this, "tile-M", 4096, "the M the tiling is chosen for", 1, 1 << 20};
  GeneratorParam<int> tile_n{this, "tile-N", 4096, "the N the tiling is chosen for", 1, 1 << 20};
  GeneratorParam<int> sm_count{this, "sm-count", 132, "multiprocessors the tiling fills", 1, 1024};

  Func build() override {
    const Type bf16 = BFloat(16);
    Input x("x", bf16, {M, K}), W("W", bf16, {N, K}), bias("bias", Float(32), {N}), residual("residual", bf16, {M, N});
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += x(i, k) * W(j, k);
    out(i, j) = cast(bf16, silu(acc(i, j) + bias(j)) + residual(i, j));
    MmaKind kind = target().has_warpgroup_mma() ? MmaKind::BF16_wgmma_m64k16 : MmaKind::BF16_m16n8k16;
    schedule_gemm_mma(out, acc, x, W, i, j, k, default_mma_tiling(kind, tile_m, tile_n, sm_count));
    return out;
  }
};

} // namespace

COALESCE_REGISTER_GENERATOR(SiluResidualLinear, "silu_residual_linear",
                            "out = bf16(silu(x W^T + bias) + residual), bf16 x, W (N x K) and residual");
