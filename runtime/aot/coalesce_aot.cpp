// coalesce-aot: the ahead-of-time tool with Coalesce's built-in generator,
// `gemm`: out = activation(A B + bias) [+ residual], row-major, B stored K x N
// or (--b=nk) N x K; A and B f32, tf32 (f32
// data on tf32 tensor cores), bf16, f16, or e4m3 / e5m2 with --scales
// (--dtype; the FP8 ones in GemmFp8.h), out f32, bf16 or f16
// (--out-dtype), the bias and all arithmetic f32. With --epilogue=swiglu it
// is instead a SwiGLU MLP's gate and up projections, y = silu(x Wg^T) *
// (x Wu^T) (GemmSwiGlu.h). Its main is aot_main.cpp;
// its schedules are dsl/recipes/GemmSchedule (FFMA, for f32) and
// dsl/recipes/GemmMmaSchedule (warp or warpgroup MMA, for the others).
//
//   coalesce-aot --name=gemm_bias_gelu --output-dir=generated
//   coalesce-aot --bias=false --activation=relu --K=4096 --name=gemm_relu --output-dir=generated
//   coalesce-aot --dtype=bf16 --out-dtype=bf16 --name=gemm_bf16 --output-dir=generated
//   coalesce-aot --dtype=tf32 --name=gemm_tf32 --output-dir=generated
//   coalesce-aot --dtype=bf16 --out-dtype=bf16 --b=nk --residual --name=linear_residual --output-dir=generated
//   coalesce-aot --dtype=e4m3 --b=nk --scales=row --name=fp8 --output-dir=generated
//   coalesce-aot --epilogue=swiglu --dtype=bf16 --out-dtype=bf16 --name=swiglu --output-dir=generated
//   coalesce-aot --emit=loops

#include "dsl/Activations.h"
#include "dsl/Error.h"
#include "dsl/IROperator.h"
#include "dsl/Limits.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Fp8Linear.h"
#include "examples/SwiGlu.h"
#include "runtime/TuneGemm.h"
#include "runtime/TuneProgress.h"
#include "runtime/aot/GemmFlags.h"
#include "runtime/aot/GemmFp8.h"
#include "runtime/aot/GemmLayouts.h"
#include "runtime/aot/GemmSwiGlu.h"
#include "runtime/aot/Generator.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace coalesce {
namespace {

using namespace aot_gemm;

/// out(i, j) = activation(sum_k A(i, k) B(k, j) + bias(j)); A is M x K, B is
/// K x N, bias has N elements, out is M x N, all row-major. bf16/f16 inputs
/// are widened exactly to f32 and the sum is f32 (as on tensor cores); a
/// bf16/f16 output is the finished f32 value rounded to nearest even. Its
/// flags, and the tiling they make, are GemmFlags's (GemmFlags.h).
class GemmGenerator : public GemmFlags {
public:
  /// e4m3 or e5m2: the FP8 linear layer (examples/Fp8Linear.h) with this
  /// generator's names, sizes and epilogue, on the warpgroup MMA.
  Func build_fp8() {
    Fp8GemmFlags flags;
    flags.dtype = dtype.value_text();
    flags.target = target();
    flags.b_nk = b_layout == GemmBLayout::NK;
    flags.b_given = b_layout.is_set();
    flags.warp_mma = mma == MmaFamily::Warp;
    flags.k_step = k_step;
    flags.residual = residual;
    flags.tuning = autotune || !tuning_db.value().empty();
    check_fp8_gemm_flags(flags);
    if (!std::string(warp_layout).empty())
      user_error("--warp-layout=", std::string(warp_layout),
                 " arranges the FFMA schedule's threads; the warpgroup schedule's warps are its warp tiles "
                 "(--warp-m, --warp-n): leave it out for e4m3 and e5m2");
    examples::Fp8LinearForm form;
    form.M = M;
    form.N = N;
    form.K = K;
    form.w_name = "B";
    form.a_scale_name = "scale_a";
    form.w_scale_name = "scale_b";
    form.scales = scales;
    form.bias = bias;
    form.activation = activation == Activation::None ? "identity" : activation.value_text();
    form.out_type = out_dtype;
    examples::Fp8Linear layer(element_type(dtype), element_type(dtype), form);
    layer.schedule_mma(mma_tiling(mma_kind_for(element_type(dtype), true)));
    return layer.out;
  }
  /// --epilogue=swiglu: examples/SwiGlu.h's algorithm with this generator's
  /// sizes, on the warpgroup MMA with default_fused_gemms_tiling and the
  /// knob flags.
  Func build_swiglu() {
    SwiGluGemmFlags flags;
    flags.dtype = dtype.value_text();
    flags.dtype_given = dtype.is_set();
    flags.target = target();
    flags.warp_mma = mma == MmaFamily::Warp;
    flags.b_kn = b_layout.is_set() && b_layout == GemmBLayout::KN;
    flags.split_k = split_k;
    flags.split_k_mode = split_k_mode.value().has_value();
    flags.bias = bias.is_set();
    flags.activation = activation.is_set() ? activation.value_text() : "";
    flags.residual = residual.is_set();
    flags.scales = scales.is_set() ? scales.value_text() : "";
    flags.tuning = autotune || !tuning_db.value().empty();
    flags.swap_ab = swap_ab.is_set();
    check_swiglu_gemm_flags(flags);
    if (!std::string(warp_layout).empty())
      user_error("--warp-layout=", std::string(warp_layout),
                 " arranges the FFMA schedule's threads; the warpgroup schedule's warps are its warp tiles "
                 "(--warp-m, --warp-n): leave it out for --epilogue=swiglu");
    examples::SwiGlu swiglu(element_type(dtype), out_dtype, examples::SwiGluSizes{M, N, K});
    const MmaKind kind = mma_kind_for(element_type(dtype), true);
    swiglu.schedule_mma(with_knob_flags(
        default_fused_gemms_tiling(kind, M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0, multiprocessors())));
    return swiglu.y;
  }
  /// The launcher takes the SwiGLU's inputs as the formula reads them.
  std::vector<std::string> input_order() const override {
    if (epilogue == Algorithm::SwiGlu)
      return {"x", "Wg", "Wu"};
    return {};
  }
  Func build() override {
    // A buffer the launcher would refuse on every call (over 2^30 elements)
    // is refused here, before anything is generated.
    const bool swiglu = epilogue == Algorithm::SwiGlu;
    const std::pair<const char *, std::pair<SizeParam *, SizeParam *>> buffers[] = {
        {swiglu ? "x" : "A", {&M, &K}}, {swiglu ? "Wg" : "B", {&K, &N}}, {swiglu ? "y" : "out", {&M, &N}}};
    for (const auto &[buffer, sizes] : buffers)
      if (sizes.first->fixed() && sizes.second->fixed() &&
          int64_t{sizes.first->value()} * sizes.second->value() > kMaxExtent)
        user_error("--", sizes.first->name(), "=", sizes.first->value(), " and --", sizes.second->name(), "=",
                   sizes.second->value(), " make ", buffer, " ", int64_t{sizes.first->value()} * sizes.second->value(),
                   " elements, over the ", kMaxExtentText, " a buffer may have: no call could run");
    check_layout_flags();
    if (swiglu)
      return build_swiglu();
    if (fp8())
      return build_fp8();
    if (scales != examples::Fp8Scales::None)
      user_error("--scales=", scales.value_text(), " scales the sum of 8-bit float inputs: it takes --dtype=e4m3 or ",
                 "e5m2, not --dtype=", dtype.value_text());
    if (k_step > 64)
      user_error("--k-step=", static_cast<int>(k_step), ": at most 64 for --dtype=", dtype.value_text(),
                 " (128, one 128-byte swizzled row, is for e4m3 and e5m2)");
    const bool b_nk = b_layout == GemmBLayout::NK;
    // A batch's dimension comes first, in the operands that carry it.
    const bool a_batched = batched == Batched::Both || batched == Batched::A,
               b_batched = batched == Batched::Both || batched == Batched::B, out_batched = batched != Batched::None;
    Var b("b"), i("i"), j("j");
    auto extents = [&](bool with_batch, Expr rows, Expr columns) {
      return with_batch ? std::vector<Expr>{batch, rows, columns} : std::vector<Expr>{rows, columns};
    };
    auto at = [&](bool with_batch, Expr x, Expr y) {
      return with_batch ? std::vector<Expr>{b, x, y} : std::vector<Expr>{x, y};
    };
    // A view's rows lie its leading dimension apart, a batched view's
    // products its batch stride.
    auto input = [&](const char *input_name, std::vector<Expr> shape, bool view, const SizeParam &lead, bool with_batch,
                     const SizeParam &stride) {
      if (!view)
        return Input(input_name, element_type(dtype), shape);
      std::vector<Expr> strides = {lead, 1};
      if (with_batch)
        strides.insert(strides.begin(), stride.expr());
      return Input(input_name, element_type(dtype), shape, strides);
    };
    const bool a_km = a_layout == ALayout::KM;
    Input A = input("A", a_km ? extents(a_batched, K, M) : extents(a_batched, M, K), uses_param(lda), lda, a_batched,
                    batch_stride_a);
    Input B = input("B", b_nk ? extents(b_batched, N, K) : extents(b_batched, K, N), uses_param(ldb), ldb, b_batched,
                    batch_stride_b);
    std::optional<Input> bias_vector, residual_matrix;
    if (bias)
      bias_vector = Input("bias", Float(32), {N});
    if (residual)
      residual_matrix = Input("residual", out_dtype, extents(out_batched, M, N));
    RDom k(0, K, "k");
    Func acc("acc"), out("out");
    const std::vector<Expr> point = at(out_batched, i, j);
    acc(point) = 0.0f;
    acc(point) += A(a_km ? at(a_batched, k, i) : at(a_batched, i, k)) *
                  (b_nk ? B(at(b_batched, j, k)) : B(at(b_batched, k, j)));
    Expr sum = acc(point);
    if (bias_vector)
      sum = sum + (*bias_vector)(j);
    // The library's activation of that name (dsl/Activations.h).
    Expr value = activation == Activation::None ? sum : coalesce::activation(activation.value_text(), sum);
    if (residual_matrix)
      value = widen_narrow_float(value) + (*residual_matrix)(point);
    out(point) = cast(out_dtype, value);
    // A column-major out's columns lie M apart, or ldc in a view; a
    // batch's products batch_stride apart.
    std::vector<Expr> strides;
    if (out_layout == OutLayout::NM)
      strides = {1, output_view ? ldc.expr() : M.expr()};
    else if (output_view)
      strides = {ldc.expr(), 1};
    if (!strides.empty() && out_batched)
      strides.insert(strides.begin(), batch_stride.expr());
    if (!strides.empty())
      out.output_strides(strides);

    if (autotune || !tuning_db.value().empty()) {
      GemmProblem problem = tuning_problem();
      apply_gemm_candidate(problem, tuned_candidate(problem), out, acc, A, B, i, j, k);
      return out;
    }

    const MmaFamily family = mma_family();
    if (dtype == InputType::F32 && family == MmaFamily::Warpgroup)
      mma_kind(dtype, family); // refuses it: f32 runs on FFMA, with no MMA to choose
    if (dtype != InputType::F32 && !std::string(warp_layout).empty())
      user_error("--warp-layout=", std::string(warp_layout), " arranges the FFMA schedule's threads; the tensor-core "
                 "schedule's warps are its warp tiles (--warp-m, --warp-n): leave it out for tf32, bf16 and f16");
    if (dtype != InputType::F32) {
      schedule_gemm_mma(out, acc, A, B, i, j, k, mma_tiling(mma_kind(dtype, family)));
      return out;
    }
    // The FFMA schedule: the library's shape-aware tiling (one knob struct,
    // dsl/recipes/GemmSchedule.h), with the tile given by the flags. Every
    // knob of GemmTiling (and of MmaTiling above) has a flag.
    GemmTiling tiling = default_gemm_tiling(M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0,
                                            K.fixed() ? K.value() : 0, multiprocessors());
    int rows = tile_m > 0 ? static_cast<int>(tile_m) : tiling.block_m;
    int columns = tile_n > 0 ? static_cast<int>(tile_n) : tiling.block_n;
    int per_thread_m = reg_m > 0 ? static_cast<int>(reg_m) : tile_m > 0 ? 8 : tiling.register_m();
    int per_thread_n = reg_n > 0 ? static_cast<int>(reg_n) : tile_n > 0 ? 8 : tiling.register_n();
    if (rows % per_thread_m != 0)
      user_error("--tile-m=", rows, " is not a multiple of --reg-m=", per_thread_m,
                 ": each thread computes reg-m rows of the tile");
    if (columns % per_thread_n != 0)
      user_error("--tile-n=", columns, " is not a multiple of --reg-n=", per_thread_n,
                 ": each thread computes reg-n columns of the tile");
    tiling.block_m = rows;
    tiling.block_n = columns;
    tiling.threads_m = rows / per_thread_m;
    tiling.threads_n = columns / per_thread_n;
    tiling.k_step = k_step > 0 ? static_cast<int>(k_step) : 8;
    tiling.block_group_rows = block_groups;
    if (persistent_blocks > 0)
      user_error("--persistent-blocks=", static_cast<int>(persistent_blocks), ": persistent grids are offered for "
                 "the tensor-core schedules (--mma=warp or --mma=warpgroup); leave the flag out for the FFMA one");
    if (cluster_blocks > 0)
      user_error("--cluster-blocks=", static_cast<int>(cluster_blocks), ": clusters share the TMA's copies, which "
                 "only the warpgroup schedule has (--mma=warpgroup); leave the flag out for the FFMA one");
    if (consumer_schedule.value() != ConsumerSchedule::Together)
      user_error("--consumer-schedule=", consumer_schedule.value_text(),
                 ": consumer schedules share a persistent block's tiles between groups of warpgroup MMA warps; "
                 "leave the flag out for the FFMA schedule");
    if (tile_stores.value())
      user_error("--tile-stores=", tile_stores.value_text(),
                 ": the FFMA schedule stores its tiles directly; the "
                 "choice is offered for the tensor-core schedules (--mma=warp or --mma=warpgroup)");
    if (stages > 0)
      tiling.stages = stages;
    else if (!double_buffered)
      tiling.stages = 1;
    parse_warp_layout(&tiling);
    tiling.async_copy = async_copy;
    if (a_padding >= 0)
      tiling.a_padding = a_padding;
    if (b_padding >= 0)
      user_error("--b-padding sets the tensor-core tiling's padding of B; the FFMA schedule stages B unpadded "
                 "(its threads read B's rows whole): leave the flag out for --dtype=f32");
    if (min_blocks_per_sm >= 0)
      user_error("--min-blocks-per-sm sets the tensor-core tiling's request; the FFMA schedule asks for two blocks "
                 "per SM when it has 256 threads or more: leave the flag out for --dtype=f32");
    tiling.split_k = chosen_split(rows, columns, tiling.k_step, split_k_blocks_per_sm(tiling.threads_m * tiling.threads_n));
    tiling.split_k_mode = split_k_mode.value().value_or(SplitKMode::Deterministic);
    schedule_gemm(out, acc, A, B, i, j, k, tiling);
    return out;
  }
};

} // namespace
} // namespace coalesce

COALESCE_REGISTER_GENERATOR(coalesce::GemmGenerator, "gemm",
                            "GEMM with an optional bias and activation: out = activation(A B + "
                            "bias), row-major; A and B f32, tf32, bf16, f16, e4m3 or e5m2 (with --scales), out f32, "
                            "bf16 or f16; or (--epilogue=swiglu) a SwiGLU, y = silu(x Wg^T) * (x Wu^T)");
