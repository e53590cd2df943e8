// coalesce-aot: the ahead-of-time tool with Coalesce's built-in generator,
// `gemm`: out = activation(A B + bias) [+ residual], row-major, B stored K x N
// or (--b=nk, on tensor cores) N x K; A and B f32, tf32 (f32
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

enum class Activation { None, Relu, Gelu, GeluTanh, Sigmoid, Silu };

/// What the kernel computes: one GEMM with its epilogue (--bias,
/// --activation, ...), or a SwiGLU's two GEMMs over one x (GemmSwiGlu.h).
enum class Algorithm { Gemm, SwiGlu };

/// The element types a buffer of the generated launcher can have.
const std::vector<std::pair<std::string, Type>> kElementTypes = {
    {"f32", Float(32)}, {"bf16", BFloat(16)}, {"f16", Float(16)}};

/// What A and B hold and which instruction multiplies them: f32 on FFMA;
/// f32 rounded to tf32, bf16 or f16 on warp MMA (tensor cores); e4m3 or
/// e5m2 on the warpgroup MMA.
enum class InputType { F32, TF32, BF16, F16, E4M3, E5M2 };

/// Which operands of a batch of products carry its dimension (the other is
/// one for the whole batch: a batch stride of 0).
enum class Batched { None, Both, A, B };
// How A is stored: M x K (row-major) or K x M (column-major).
enum class ALayout { MK, KM };
// How out is stored: M x N (row-major) or N x M (column-major).
enum class OutLayout { MN, NM };

/// Which inputs are views into larger tensors, rows --lda / --ldb apart.
enum class Views { None, A, B, Both };
const std::vector<std::pair<std::string, InputType>> kInputTypes = {
    {"f32", InputType::F32}, {"tf32", InputType::TF32}, {"bf16", InputType::BF16},
    {"f16", InputType::F16}, {"e4m3", InputType::E4M3}, {"e5m2", InputType::E5M2}};

Type element_type(InputType t) {
  switch (t) {
  case InputType::BF16:
    return BFloat(16);
  case InputType::F16:
    return Float(16);
  case InputType::E4M3:
    return Float8E4M3();
  case InputType::E5M2:
    return Float8E5M2();
  case InputType::F32:
  case InputType::TF32:
    break;
  }
  return Float(32);
}

/// What multiplies an FP8 GEMM's sum (examples::Fp8Scales).
const std::vector<std::pair<std::string, examples::Fp8Scales>> kScales = {
    {"none", examples::Fp8Scales::None}, {"tensor", examples::Fp8Scales::Tensor}, {"row", examples::Fp8Scales::Row}};

/// Which tensor-core instructions: the warp's mma.sync (sm_80 and later) or
/// Hopper's warpgroup wgmma (sm_90a; tf32, bf16 and f16); auto: what the
/// benchmark runs for the target, the warpgroup MMA on sm_90a, the warp's
/// elsewhere.
enum class MmaFamily { Auto, Warp, Warpgroup };
const std::vector<std::pair<std::string, MmaFamily>> kMmaFamilies = {
    {"auto", MmaFamily::Auto}, {"warp", MmaFamily::Warp}, {"warpgroup", MmaFamily::Warpgroup}};

MmaKind mma_kind(InputType t, MmaFamily family) {
  bool group = family == MmaFamily::Warpgroup;
  if (group && t == InputType::F32)
    user_error("--mma=warpgroup multiplies tf32, bf16 or f16 inputs; --dtype=f32 runs on FFMA and has no "
               "warpgroup schedule: use --dtype=tf32 (f32 data rounded to tf32), bf16 or f16");
  return mma_kind_for(element_type(t), group);
}

/// out(i, j) = activation(sum_k A(i, k) B(k, j) + bias(j)); A is M x K, B is
/// K x N, bias has N elements, out is M x N, all row-major. bf16/f16 inputs
/// are widened exactly to f32 and the sum is f32 (as on tensor cores); a
/// bf16/f16 output is the finished f32 value rounded to nearest even.
class GemmGenerator : public Generator {
public:
  SizeParam M{this, "M", "the product's rows: A's (its columns with --a=km) and out's (swiglu: x's and y's)"};
  SizeParam N{this, "N",
              "the product's columns: B's (its rows with --b=nk) and out's; elements of bias (swiglu: rows of Wg "
              "and Wu, columns of y)"};
  SizeParam K{this, "K",
              "the reduction: A's columns (rows with --a=km) and B's rows (columns with --b=nk) (swiglu: "
              "columns of x, Wg and Wu)"};
  EnumParam<Algorithm> epilogue{
      this,
      "epilogue",
      Algorithm::Gemm,
      {{"gemm", Algorithm::Gemm}, {"swiglu", Algorithm::SwiGlu}},
      "what the kernel computes: gemm, out = activation(A B + bias) [+ residual] (the flags below); swiglu, a "
      "SwiGLU MLP's gate and up projections in one kernel, y = out-dtype(silu(x Wg^T) * (x Wu^T)), x M x K, Wg "
      "and Wu N x K (nn.Linear's weights), the launcher taking x, Wg, Wu, y: --dtype=bf16 or f16, sm_90a's "
      "warpgroup MMA on 128 x 128 tiles, without --bias, --activation, --residual, --scales, --split-k or tuning"};
  GeneratorParam<bool> bias{this, "bias", true,
                            "add bias[j] to column j of the product, before the activation"};
  GeneratorParam<bool> residual{this, "residual", false,
                                "add residual[i][j] (M x N, of the output's type) after the activation: "
                                "out = activation(A B + bias) + residual"};
  EnumParam<ALayout> a_layout{this,
                              "a",
                              ALayout::MK,
                              {{"mk", ALayout::MK}, {"km", ALayout::KM}},
                              "how A is stored: mk (M x K, A[m][k], row-major) or km (K x M, A[k][m], column-major, "
                              "read A(k, i): the 16-bit warpgroup MMA reads its tiles with the transpose flag); km "
                              "on tensor cores (tf32, bf16, f16), without FP8, --epilogue=swiglu or tuning"};
  EnumParam<GemmBLayout> b_layout{this,
                              "b",
                              GemmBLayout::KN,
                              {{"kn", GemmBLayout::KN}, {"nk", GemmBLayout::NK}},
                              "how B is stored: kn (K x N, B[k][n]) or nk (N x K, W[n][k], as PyTorch's "
                              "nn.Linear keeps its weight: out = A W^T); nk on tensor cores (tf32, bf16, f16)"};
  EnumParam<Activation> activation{
      this,
      "activation",
      Activation::Gelu,
      {{"none", Activation::None},
       {"relu", Activation::Relu},
       {"gelu", Activation::Gelu},
       {"gelu_tanh", Activation::GeluTanh},
       {"sigmoid", Activation::Sigmoid},
       {"silu", Activation::Silu}},
      "the epilogue: none; relu; gelu, exact (erf), as PyTorch's default; gelu_tanh, the tanh "
      "approximation"};
  EnumParam<InputType> dtype{this, "dtype", InputType::F32, kInputTypes,
                             "A and B and how they are multiplied: f32 (FFMA); tf32 (f32 data, each "
                             "value rounded to tf32, 10 mantissa bits, nearest, ties away, on tensor "
                             "cores); bf16 (bfloat16) or f16 (IEEE half) on tensor cores; e4m3 or e5m2 "
                             "(8-bit floats, one byte each, B stored N x K: --b=nk) on Hopper's warpgroup "
                             "MMA (sm_90a), whose accumulator keeps fewer bits than f32. The sum is "
                             "f32 whatever it is, and tensor cores sum each k step in their own order; the "
                             "bias is always f32"};
  EnumParam<Batched> batched{
      this,
      "batched",
      Batched::None,
      {{"none", Batched::None}, {"both", Batched::Both}, {"a", Batched::A}, {"b", Batched::B}},
      "a batch of products, out batch x M x N, the batch the grid's third dimension: none (one product); both (A "
      "batch x M x K, B batch x K x N, or batch x N x K with --b=nk); a (A batched, one B for the whole batch: a "
      "weight that every input of the batch shares); b (B batched, one A). On tensor cores (tf32, bf16, f16), "
      "without --split-k, --cluster-blocks or tuning (with --persistent-blocks: its blocks walk the batch's tiles)"};
  SizeParam batch{this, "batch", "with --batched: products in the batch"};
  EnumParam<Views> views{
      this,
      "views",
      Views::None,
      {{"none", Views::None}, {"a", Views::A}, {"b", Views::B}, {"both", Views::Both}},
      "inputs that are views into larger tensors, their rows --lda (A) or --ldb (B) elements apart: none (dense); "
      "a; b; both. The launcher takes the leading dimensions after the sizes and checks each buffer's reach; the "
      "copies test them for 16-byte vectors and the TMA at run time. With --batched, a batched view's products "
      "are --batch_stride_a (A) or --batch_stride_b (B) elements apart (a strided batch, as "
      "cublasGemmStridedBatchedEx takes it). Not with FP8 or --epilogue=swiglu"};
  SizeParam lda{this, "lda", "with --views=a or both: elements from one row of A to the next"};
  SizeParam ldb{this, "ldb", "with --views=b or both: elements from one row of B to the next"};
  SizeParam batch_stride_a{this, "batch_stride_a",
                           "with --batched=both or a and --views=a or both: elements from one product of A to the "
                           "next"};
  SizeParam batch_stride_b{this, "batch_stride_b",
                           "with --batched=both or b and --views=b or both: elements from one product of B to the "
                           "next"};
  GeneratorParam<bool> output_view{
      this, "output-view", false,
      "out a view into a larger tensor, its rows --ldc elements apart (out.output_strides({ldc, 1})): the "
      "launcher takes ldc after the sizes and checks out's reach; the kernels write nothing between the rows. "
      "Tensor cores only, not with FP8, --epilogue=swiglu or tuning; with --batched, out's products "
      "--batch_stride elements apart"};
  SizeParam ldc{this, "ldc",
                "with --output-view: elements from one row of out to the next (with --out=nm, one column to the "
                "next)"};
  SizeParam batch_stride{this, "batch_stride",
                         "with --batched and --output-view or --out=nm: elements from one product of out to the "
                         "next"};
  EnumParam<OutLayout> out_layout{
      this,
      "out",
      OutLayout::MN,
      {{"mn", OutLayout::MN}, {"nm", OutLayout::NM}},
      "how out is stored: mn (M x N, out[m][n], row-major) or nm (N x M, out[n][m], column-major: out(i, j) at i + "
      "j * M, or i + j * ldc with --output-view; the staged tiles are copied out in 16-byte vectors down the "
      "columns). nm is an output view: tensor cores only, not with FP8, --epilogue=swiglu or tuning; with "
      "--batched, out's products --batch_stride elements apart"};
  EnumParam<examples::Fp8Scales> scales{
      this, "scales", examples::Fp8Scales::None, kScales,
      "e4m3 and e5m2: what multiplies the f32 sum, before the bias and the activation: none; tensor (scale_a and "
      "scale_b, one f32 each in device memory, as cuBLASLt's scale pointers); row (scale_a[M], one f32 per row "
      "of A, and scale_b[N], one per row of B, i.e. per column of out)"};
  EnumParam<Type> out_dtype{this, "out-dtype", Float(32), kElementTypes,
                            "the element type of out: f32; bf16 or f16 (the f32 result rounded to "
                            "nearest even)"};
  GeneratorParam<int> tile_m{this, "tile-m", 0,
                             "rows of out per thread block; 0 (default): chosen from the shape, "
                             "128 when the shape is left to run time",
                             0, 256};
  GeneratorParam<int> tile_n{this, "tile-n", 0, "columns of out per thread block; 0: chosen from the shape",
                             0, 256};
  GeneratorParam<int> reg_m{this, "reg-m", 0,
                            "rows of out per thread, in registers (threads per block: "
                            "tile-m/reg-m by tile-n/reg-n); 0: the tiling's choice (8, or 4 for a "
                            "small-M tile)",
                            0, 16};
  GeneratorParam<int> reg_n{this, "reg-n", 0, "columns of out per thread, in registers; 0: the tiling's choice",
                            0, 16};
  GeneratorParam<int> split_k{this, "split-k", 1,
                              "blocks the reduction is split across (split_k): each computes a slice of K, "
                              "the last block of a tile adds the slices and runs the epilogue; the launcher "
                              "then takes a workspace (NAME_workspace_bytes). 1: no split; 0: chosen from "
                              "the shape and --sm-count (needs --M, --N and --K)",
                              0, 256};
  // "auto", the default, is written out as such in the header's command
  // line, so that the command regenerates the library's choice.
  EnumParam<std::optional<SplitKMode>> split_k_mode{
      this,
      "split-k-mode",
      std::nullopt,
      {{"auto", std::nullopt},
       {"deterministic", SplitKMode::Deterministic},
       {"atomic", SplitKMode::Atomic},
       {"combine-kernel", SplitKMode::CombineKernel}},
      "how the slices are added: deterministic (the last block of a tile adds them in slice order: the same bits on "
      "every run), atomic (float atomics, the order of arrival) or combine-kernel (a second kernel over the whole "
      "output adds them in slice order: the deterministic bits, for large tiles in many slices); auto: the library's "
      "choice with --split-k=0, deterministic with a count given"};
  GeneratorParam<int> k_step{this,
                             "k-step",
                             0,
                             "elements of K staged in shared memory per step, at most 64 (128 for e4m3 and "
                             "e5m2, the one k step they take: a 128-byte swizzled row); 0: 8 for f32, the "
                             "tensor-core tiling's choice otherwise",
                             0,
                             128};
  GeneratorParam<int> warp_m{this, "warp-m", 0,
                             "tensor cores: rows of out per warp; 0: chosen with the tile", 0, 256};
  GeneratorParam<int> warp_n{this, "warp-n", 0, "tensor cores: columns of out per warp; 0: chosen with the tile",
                             0, 256};
  EnumParam<MmaFamily> mma{this, "mma", MmaFamily::Auto, kMmaFamilies,
                           "tensor cores: warp (mma.sync, sm_80 and later), warpgroup (Hopper's wgmma, "
                           "sm_90a only, tf32, bf16, f16, e4m3 and e5m2; warp-m x warp-n is then the 64 x N "
                           "tile of a "
                           "warpgroup of 4 warps), or auto (the default): what the benchmark runs for the "
                           "target, warpgroup on sm_90a and warp elsewhere"};

  /// --mma with auto resolved for the target.
  MmaFamily mma_family() const {
    if (mma != MmaFamily::Auto)
      return mma;
    return target().has_warpgroup_mma() && dtype != InputType::F32 ? MmaFamily::Warpgroup : MmaFamily::Warp;
  }
  GeneratorParam<int> stages{this, "stages", 0,
                             "tiles of A and B in shared memory, one K step each (f32: 1 to 8, 1: one tile, "
                             "2: double buffering, 3 or more: a cp.async pipeline; tensor cores: 2 to 8); 0: the "
                             "tiling's choice",
                             0, 8};
  GeneratorParam<bool> swap_ab{this, "swap-ab", true,
                               "with --dtype=bf16 or f16 on the warpgroup MMA and --M, --N and --K fixed, --M at 64 "
                               "rows or fewer (a decode step): swap A and B, B's rows filling the instruction's 64 and "
                               "x's, rounded up to 8, its N, with that rule's tiles, k step and stages "
                               "(swap_ab_where_rows_are_few; --split-k=0 takes its one-wave split); false: x's rows "
                               "along the instruction's M"};
  GeneratorParam<bool> tma{this, "tma", true,
                           "with --mma=warpgroup and 3 or more stages: copy the tiles with the tensor memory "
                           "accelerator (one thread's bulk copies, an mbarrier per pipeline slot) instead of every "
                           "thread's cp.async copies (--tma=false); inputs whose rows are not multiples of 16 bytes "
                           "take the cp.async copies at run time; tf32 reads copies of A and B made first "
                           "(--tma-padded-copies), rounded to tf32 and B transposed. Warp MMAs and f32 always use "
                           "cp.async"};
  GeneratorParam<int> producer_warps{this, "producer-warps", 0,
                                     "with the TMA's copies: warps of their own issue them (warp specialization, "
                                     "1 to 4, past the MMA warps in the block); 0: the MMA warps' first thread",
                                     0, 4};
  GeneratorParam<int> producer_registers{this, "producer-registers", 0,
                                         "with --producer-warps=4: register reallocation, the producer warpgroup "
                                         "keeps this many registers per thread (24 to 256, a multiple of 8) and "
                                         "the MMA warps take the rest (setmaxnreg); 0: none",
                                         0, 256};
  GeneratorParam<int> cluster_blocks{this, "cluster-blocks", 0,
                                     "with the TMA's copies: consecutive block rows in clusters of this many (2 to "
                                     "8), which share B's tiles (multicast; sm_90a); 0: none",
                                     0, 8};
  EnumParam<std::optional<TileStores>> tile_stores{
      this,
      "tile-stores",
      std::nullopt,
      {{"auto", std::nullopt},
       {"direct", TileStores::Direct},
       {"shared", TileStores::ThroughShared},
       {"sums", TileStores::SumsThroughShared}},
      "tensor cores: how blocks store their output tiles (gpu_tile_stores): direct (each thread its elements), "
      "shared (through a shared-memory tile, in 16-byte vectors; 16-bit outputs) or sums (the f32 sums through "
      "shared memory, the epilogue computed in the copy, a vector at a time: its code once, a fraction of the "
      "compile time); auto: the tiling's"};
  GeneratorParam<bool> tma_padded_copies{
      this, "tma-padded-copies", false,
      "with the TMA's copies: copy A and B first (a kernel each) into workspaces whose rows are padded to 16-byte "
      "multiples (for tf32 also rounded to tf32, B transposed), and let the TMA read those; on by itself for tf32 "
      "and where --N or --K is given and its rows are not whole 16 bytes (sizes given at run time otherwise take "
      "the cp.async copies where rows are ragged)"};
  GeneratorParam<std::string> warp_layout{this, "warp-layout", "",
                                          "f32: each warp covers RxC of the block's threads (R * C = 32, e.g. "
                                          "4x8); empty: row order (gpu_threads)"};
  GeneratorParam<int> min_blocks_per_sm{this, "min-blocks-per-sm", -1,
                                        "blocks each multiprocessor should hold (ptxas caps registers to fit); "
                                        "0: no cap; -1 (default): the tiling's choice",
                                        -1, 32};
  GeneratorParam<int> block_groups{this, "block-groups", 0,
                                   "run the blocks in groups of this many block rows (gpu_block_groups); 0: row "
                                   "by row",
                                   0, 1024};
  GeneratorParam<int> persistent_blocks{this, "persistent-blocks", 0,
                                        "tensor-core schedules: run the tiles on at most this many blocks, each "
                                        "walking tiles a grid apart (gpu_persistent_blocks); 0: a block per tile",
                                        0, 65535};
  GeneratorParam<int> sm_count{this, "sm-count", 0,
                               "multiprocessors the shape-aware choices (the tile, --split-k=0) give work to; "
                               "0: those of the --target's GPU (132 for sm_90a, the H200's)",
                               0, 1024};
  GeneratorParam<bool> double_buffered{this, "double-buffered", true,
                                       "stage the next K step while computing this one (double_buffered); "
                                       "false: one buffer per input, the copy and the compute in turn"};
  GeneratorParam<bool> async_copy{this, "async-copy", true,
                                  "f32: copy A and B into shared memory with cp.async (sm_80+), not through "
                                  "registers (tensor-core schedules always do)"};
  GeneratorParam<int> a_padding{this, "a-padding", -1,
                                "elements after each staged row of A, against bank conflicts; -1: the tiling's "
                                "choice (4 for f32, 8 for warp MMA; warpgroup MMA swizzles instead and takes 0)",
                                -1, 64};
  GeneratorParam<int> b_padding{this, "b-padding", -1,
                                "tensor cores: elements after each staged row of B; -1: the tiling's choice (8 for "
                                "warp MMA, 0 for warpgroup MMA)",
                                -1, 64};

  // The multiprocessors to fill: --sm-count, else the target's GPU's.
  int multiprocessors() const { return sm_count > 0 ? static_cast<int>(sm_count) : target().sm_count(); }

  GeneratorParam<std::string> tuning_db{
      this, "tuning-db", "",
      "a tuning database (JSON, docs/tuning.md): the tiling is the best one recorded for this problem (dtype, "
      "out-dtype, epilogue, --M/--N/--K, --target), else the nearest of its shape class, else the default "
      "(with a note); with --autotune, the result is merged into it"};
  GeneratorParam<bool> autotune{this, "autotune", false,
                                "search the tiling on this machine's GPU (needs one, of the --target): legality "
                                "checks, parallel compilation, checked timings; the winner is compiled"};
  GeneratorParam<int> autotune_candidates{this, "autotune-candidates", 50,
                                          "with --autotune: legal candidates compiled and timed at most", 1, 10000};

  // --split-k, with 0 resolved from the shape (which must then be fixed).
  int chosen_split(int block_m, int block_n, int step, int blocks_per_sm) const {
    if (split_k > 0)
      return split_k;
    if (!M.fixed() || !N.fixed() || !K.fixed())
      user_error("--split-k=0 chooses the split from the shape: give --M, --N and --K, or a split count");
    int64_t tiles = ((M.value() + block_m - 1) / block_m) * ((N.value() + block_n - 1) / block_n);
    return default_split_k(tiles, K.value(), step, multiprocessors(), blocks_per_sm);
  }

  // --warp-layout=RxC into the tiling (schedule_gemm checks the shape).
  void parse_warp_layout(GemmTiling *tiling) const {
    std::string text = warp_layout;
    if (text.empty())
      return;
    size_t x = text.find('x');
    auto number = [&](const std::string &part) {
      if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos)
        user_error("--warp-layout=", text, ": expected RxC, two positive numbers with R * C = 32 (e.g. 4x8)");
      return std::stoi(part);
    };
    if (x == std::string::npos)
      number("");
    tiling->warp_rows = number(text.substr(0, x));
    tiling->warp_cols = number(text.substr(x + 1));
    std::string why = warp_layout_error(tiling->threads_m, tiling->threads_n, tiling->warp_rows, tiling->warp_cols);
    if (!why.empty())
      user_error("--warp-layout=", text, ": ", why);
  }

  /// The problem the tuning database and the autotuner key on.
  GemmProblem tuning_problem() const {
    if (!M.fixed() || !N.fixed() || !K.fixed())
      user_error("--tuning-db and --autotune key on the exact shape: give --M, --N and --K");
    if (!bias && activation != Activation::None)
      user_error("--tuning-db and --autotune cover the epilogues none, bias, and bias with an activation; "
                 "--bias=false with --activation=", activation.value_text(), " is not one of them");
    if (residual)
      user_error("--tuning-db and --autotune cover epilogues without a residual; leave out --residual, or set the "
                 "tiling by hand");
    GemmProblem problem;
    problem.dtype = dtype.value_text();
    problem.out_dtype = out_dtype.value_text();
    problem.epilogue = !bias ? "none" : activation == Activation::None ? "bias" : "bias_" + activation.value_text();
    problem.M = M.value();
    problem.N = N.value();
    problem.K = K.value();
    problem.b_layout = b_layout;
    return problem;
  }

  /// The tiling from the tuning database or the autotuner.
  GemmCandidate tuned_candidate(const GemmProblem &problem) const {
    // One knob per line would take 25 lines.
    // clang-format off
    const std::initializer_list<const GeneratorParamBase *> knobs = {
        &tile_m, &tile_n, &reg_m, &reg_n, &split_k, &split_k_mode, &k_step, &warp_m, &warp_n, &mma, &stages,
        &min_blocks_per_sm, &block_groups, &persistent_blocks, &tma, &swap_ab, &producer_warps, &producer_registers,
        &tma_padded_copies, &cluster_blocks, &tile_stores, &warp_layout, &double_buffered, &async_copy, &a_padding,
        &b_padding};
    // clang-format on
    // A knob given its default value (as the header's regenerating command
    // gives every flag) sets nothing.
    for (const GeneratorParamBase *knob : knobs)
      if (knob->is_set() && knob->value_text() != knob->default_text())
        user_error("--", knob->name(), " sets a knob that --tuning-db/--autotune choose; leave it out, or set the "
                   "tiling by hand without them");
    if (!autotune) {
      std::string note;
      GemmCandidate candidate = tuned_or_default_candidate(tuning_db, problem, target().sm(), "", multiprocessors(), &note);
      std::fprintf(stderr, "%s\n", note.c_str());
      return candidate;
    }
    TuneRequest request;
    request.problem = problem;
    request.database = tuning_db;
    request.target_sm = target().sm();
    request.max_candidates = static_cast<size_t>(autotune_candidates.value());
    request.progress = progress_wanted(stderr);
    TuneOutcome outcome = tune_gemm_on_this_gpu(request);
    std::fprintf(stderr, "%s", outcome.result.summary().c_str());
    if (!request.database.empty())
      std::fprintf(stderr, "merged into the tuning database %s\n", request.database.c_str());
    return outcome.best;
  }

  bool fp8() const { return dtype == InputType::E4M3 || dtype == InputType::E5M2; }

  /// The tensor-core tiling for `kind`: the library's default for the shape,
  /// with every knob the flags set.
  MmaTiling mma_tiling(MmaKind kind) const {
    // --split-k=0 at a fixed shape: the library's default for it, whose
    // split comes with its tile and combine (a deep K's 128 x 128 tiles and
    // combine kernel).
    // A batch of a known count: the tile counts every product's blocks.
    MmaTiling tiling =
        batched != Batched::None && batch.fixed()
            ? default_batched_mma_tiling(kind, batch.value(), M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0,
                                         K.fixed() ? K.value() : 0, multiprocessors())
        : split_k == 0 && M.fixed() && N.fixed() && K.fixed()
            ? default_mma_tiling(kind, M.value(), N.value(), K.value(), multiprocessors())
            : default_mma_tiling(kind, M.fixed() ? M.value() : 0, N.fixed() ? N.value() : 0, multiprocessors());
    // A decode step's few rows of x: swap-AB, as the library's default does
    // (the rule leaves the tiling alone elsewhere).
    if (swap_ab && epilogue != Algorithm::SwiGlu && M.fixed() && N.fixed() && K.fixed())
      swap_ab_where_rows_are_few(tiling, M.value(), N.value(), K.value(), multiprocessors());
    return with_knob_flags(tiling);
  }

  /// `tiling` with every knob the flags set.
  MmaTiling with_knob_flags(MmaTiling tiling) const {
    const MmaFamily family = mma_family();
    if (tile_m > 0)
      tiling.block_m = tile_m;
    if (tile_n > 0)
      tiling.block_n = tile_n;
    if (warp_m > 0)
      tiling.warp_m = warp_m;
    if (warp_n > 0)
      tiling.warp_n = warp_n;
    if (k_step > 0)
      tiling.k_step = k_step;
    if (stages == 1)
      user_error("--stages=1: a pipeline has 2 to 8 stages (0: the tiling's choice)");
    if (stages > 0)
      tiling.stages = stages;
    if (min_blocks_per_sm >= 0)
      tiling.min_blocks_per_sm = min_blocks_per_sm;
    if (!async_copy)
      user_error("--async-copy=false: the tensor-core schedules copy A and B with cp.async only; leave the "
                 "flag out, or use --dtype=f32");
    if (!double_buffered && stages > 2)
      user_error("--stages=", static_cast<int>(stages),
                 " with --double-buffered=false: a single buffer holds one K step; leave --stages out, or keep "
                 "double buffering");
    tiling.double_buffered = double_buffered;
    if (!double_buffered)
      tiling.stages = 2; // one buffer: no deeper pipeline
    if (a_padding >= 0)
      tiling.a_padding = a_padding;
    if (b_padding >= 0)
      tiling.b_padding = b_padding;
    tiling.block_group_rows = block_groups;
    tiling.persistent_blocks = persistent_blocks;
    tiling.tma = tma && family == MmaFamily::Warpgroup;
    if (producer_warps > 0 && !tiling.uses_tma())
      user_error("--producer-warps=", static_cast<int>(producer_warps),
                 ": producer warps issue the TMA's copies, which this kernel does not use (they need "
                 "--mma=warpgroup, 3 or more stages and --tma); leave the flag out");
    tiling.producer_warps = producer_warps;
    if (producer_registers > 0 && producer_warps != 4)
      user_error("--producer-registers=", static_cast<int>(producer_registers),
                 ": registers are reallocated per warpgroup, so it takes --producer-warps=4");
    tiling.producer_registers = producer_registers;
    if (tma_padded_copies && !tiling.uses_tma())
      user_error("--tma-padded-copies: the padded copies are what the TMA reads, and this kernel does not use it "
                 "(it needs --mma=warpgroup, 3 or more stages and --tma); leave the flag out");
    if (dtype == InputType::TF32 && tiling.uses_tma() && tma_padded_copies.is_set() && !tma_padded_copies)
      user_error("--tma-padded-copies=false with --dtype=tf32 and the TMA's copies: the tf32 warpgroup MMA reads "
                 "A and B rounded to tf32 and B transposed, which only the copies make; leave the flag out, or "
                 "use --tma=false (every thread's cp.async copies)");
    tiling.tma_padded_copies = tma_padded_copies;
    if (cluster_blocks > 0 && (cluster_blocks == 1 || !tiling.uses_tma()))
      user_error("--cluster-blocks=", static_cast<int>(cluster_blocks), ": clusters share the TMA's copies of B, ",
                 cluster_blocks == 1
                     ? "and a cluster has 2 to 8 blocks"
                     : "which this kernel does not use (it needs --mma=warpgroup, 3 or more stages and --tma)",
                 "; leave the flag out");
    tiling.cluster_blocks = cluster_blocks;
    if (tile_stores.value())
      tiling.tile_stores = *tile_stores.value();
    if (stages == 0) // the tiling's stages: those that fit beside the knobs' output tile
      fit_output_tile_beside_stages(tiling);
    // Sizes fixed when generating whose rows the TMA cannot read: padded
    // copies (sizes given at run time keep the in-kernel cp.async branch).
    use_tma_copies_where_needed(tiling, N.fixed() ? N.value() : 0, K.fixed() ? K.value() : 0);
    // --split-k=0 on swapped tiles, or on the default's tile: the rule's
    // own split and combine (unless --split-k-mode names one).
    const bool tile_flags =
        tile_m > 0 || tile_n > 0 || warp_m > 0 || warp_n > 0 || k_step > 0 || min_blocks_per_sm >= 0;
    const bool whole_shape = M.fixed() && N.fixed() && K.fixed();
    if (!(split_k == 0 && whole_shape && (tiling.swap_ab || !tile_flags)))
      tiling.split_k = chosen_split(tiling.block_m, tiling.block_n, tiling.k_step, tiling.min_blocks_per_sm);
    if (split_k_mode.value())
      tiling.split_k_mode = *split_k_mode.value();
    else if (split_k != 0)
      tiling.split_k_mode = SplitKMode::Deterministic;
    return tiling;
  }

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

  /// --batched, --batch, --views, --lda, --ldb: what a batch or a view runs
  /// with (GemmLayouts.h).
  void check_layout_flags() const {
    GemmLayoutFlags flags;
    flags.batched = batched.value_text();
    flags.views = views.value_text();
    flags.a_km = a_layout == ALayout::KM;
    flags.dtype = dtype.value_text();
    flags.f32 = dtype == InputType::F32;
    flags.fp8 = fp8();
    flags.swiglu = epilogue == Algorithm::SwiGlu;
    flags.batch_given = batch.fixed();
    flags.batch = batch.fixed() ? batch.value() : 0;
    flags.lda_given = lda.fixed();
    flags.ldb_given = ldb.fixed();
    flags.output_view = output_view;
    flags.out_nm = out_layout == OutLayout::NM;
    flags.batch_stride_given = batch_stride.fixed();
    flags.batch_stride_a_given = batch_stride_a.fixed();
    flags.batch_stride_b_given = batch_stride_b.fixed();
    flags.ldc_given = ldc.fixed();
    flags.split_k = split_k;
    flags.persistent_blocks = persistent_blocks;
    flags.cluster_blocks = cluster_blocks;
    flags.autotune = autotune;
    flags.tuning_db = !tuning_db.value().empty();
    check_gemm_layout_flags(flags);
  }

  /// The launcher takes the SwiGLU's inputs as the formula reads them.
  std::vector<std::string> input_order() const override {
    if (epilogue == Algorithm::SwiGlu)
      return {"x", "Wg", "Wu"};
    return {};
  }

  /// The flags of the single GEMM's epilogue, layout, split and tuning,
  /// which the SwiGLU refuses when given (check_swiglu_gemm_flags), and of
  /// the FFMA schedule, which it does not have.
  std::vector<const GeneratorParamBase *> gemm_only_params() const {
    return {&bias,    &residual,     &a_layout,    &b_layout,    &activation, &scales,
            &split_k, &split_k_mode, &tuning_db,   &autotune,   &autotune_candidates,
            &reg_m,   &reg_n,        &warp_layout, &async_copy, &swap_ab};
  }

  /// A SwiGLU's regenerating command line leaves out the single GEMM's flags.
  bool uses_param(const GeneratorParamBase &param) const override {
    // A single product's command line and signature leave the batch out.
    if (&param == &batch || &param == &batched)
      return batched != Batched::None;
    if (&param == &views)
      return views != Views::None;
    if (&param == &lda)
      return views == Views::A || views == Views::Both;
    if (&param == &ldb)
      return views == Views::B || views == Views::Both;
    if (&param == &output_view || &param == &ldc)
      return output_view;
    if (&param == &out_layout)
      return out_layout == OutLayout::NM;
    if (&param == &batch_stride)
      return batched != Batched::None && (output_view || out_layout == OutLayout::NM);
    if (&param == &batch_stride_a)
      return (batched == Batched::Both || batched == Batched::A) && uses_param(lda);
    if (&param == &batch_stride_b)
      return (batched == Batched::Both || batched == Batched::B) && uses_param(ldb);
    const std::vector<const GeneratorParamBase *> gemm_only = gemm_only_params();
    return epilogue != Algorithm::SwiGlu || std::find(gemm_only.begin(), gemm_only.end(), &param) == gemm_only.end();
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
    // B stored N x K runs on the tensor-core paths, which the GPU check
    // covers with it; the FFMA schedules have not been checked on a GPU so.
    const bool b_nk = b_layout == GemmBLayout::NK;
    if (b_nk && dtype == InputType::F32)
      user_error("--b=nk (B stored N x K) runs on tensor cores: give --dtype=tf32, bf16 or f16; the f32 (FFMA) "
                 "schedules take B stored K x N");
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
