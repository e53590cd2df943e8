#pragma once
// coalesce-aot's `gemm` generator's flags (coalesce_aot.cpp builds the
// kernel from them): their declarations, in the order --help lists them,
// what each means, and how the knob flags make the tiling (the library's
// default for the shape, each knob a flag sets; the tuning database or the
// autotuner instead, with --tuning-db / --autotune).

#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Fp8Linear.h"
#include "runtime/TuneGemm.h"
#include "runtime/aot/Generator.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coalesce::aot_gemm {

enum class Activation { None, Relu, Gelu, GeluTanh, Sigmoid, Silu };

/// What the kernel computes: one GEMM with its epilogue (--bias,
/// --activation, ...), or a SwiGLU's two GEMMs over one x (GemmSwiGlu.h).
enum class Algorithm { Gemm, SwiGlu };

/// The element types a buffer of the generated launcher can have.
inline const std::vector<std::pair<std::string, Type>> kElementTypes = {
    {"f32", Float(32)}, {"bf16", BFloat(16)}, {"f16", Float(16)}};

/// What A and B hold and which instruction multiplies them: f32 on FFMA;
/// f32 rounded to tf32, bf16 or f16 on warp MMA (tensor cores); e4m3 or
/// e5m2 on the warpgroup MMA.
enum class InputType { F32, TF32, TF32Truncated, BF16, F16, E4M3, E5M2 };

/// Which operands of a batch of products carry its dimension (the other is
/// one for the whole batch: a batch stride of 0).
enum class Batched { None, Both, A, B };
// How A is stored: M x K (row-major) or K x M (column-major).
enum class ALayout { MK, KM };
// How out is stored: M x N (row-major) or N x M (column-major).
enum class OutLayout { MN, NM };

/// Which inputs are views into larger tensors, rows --lda / --ldb apart.
enum class Views { None, A, B, Both };
inline const std::vector<std::pair<std::string, InputType>> kInputTypes = {
    {"f32", InputType::F32},   {"tf32", InputType::TF32}, {"tf32-truncated", InputType::TF32Truncated},
    {"bf16", InputType::BF16}, {"f16", InputType::F16},   {"e4m3", InputType::E4M3},
    {"e5m2", InputType::E5M2}};

/// The element type of A and B for --dtype.
Type element_type(InputType t);

/// What multiplies an FP8 GEMM's sum (examples::Fp8Scales).
inline const std::vector<std::pair<std::string, examples::Fp8Scales>> kScales = {
    {"none", examples::Fp8Scales::None}, {"tensor", examples::Fp8Scales::Tensor}, {"row", examples::Fp8Scales::Row}};

/// Which tensor-core instructions: the warp's mma.sync (sm_80 and later) or
/// Hopper's warpgroup wgmma (sm_90a; tf32, bf16 and f16); auto: what the
/// benchmark runs for the target, the warpgroup MMA on sm_90a, the warp's
/// elsewhere.
enum class MmaFamily { Auto, Warp, Warpgroup };
inline const std::vector<std::pair<std::string, MmaFamily>> kMmaFamilies = {
    {"auto", MmaFamily::Auto}, {"warp", MmaFamily::Warp}, {"warpgroup", MmaFamily::Warpgroup}};

/// The instruction for --dtype on the family (--mma=warpgroup with f32 refused).
MmaKind mma_kind(InputType t, MmaFamily family);

/// The `gemm` generator's flags and the tiling they make; the generator
/// (coalesce_aot.cpp) builds out(i, j) = activation(sum_k A(i, k) B(k, j) +
/// bias(j)) from them.
class GemmFlags : public Generator {
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
  GeneratorParam<bool> bias{this, "bias", true, "add bias[j] to column j of the product, before the activation"};
  GeneratorParam<bool> residual{this, "residual", false,
                                "add residual[i][j] (M x N, of the output's type) after the activation: "
                                "out = activation(A B + bias) + residual"};
  EnumParam<ALayout> a_layout{this,
                              "a",
                              ALayout::MK,
                              {{"mk", ALayout::MK}, {"km", ALayout::KM}},
                              "how A is stored: mk (M x K, A[m][k], row-major) or km (K x M, A[k][m], column-major, "
                              "read A(k, i): the 16-bit warpgroup MMA reads its tiles with the transpose flag); km "
                              "without FP8, --epilogue=swiglu or tuning"};
  EnumParam<GemmBLayout> b_layout{this,
                                  "b",
                                  GemmBLayout::KN,
                                  {{"kn", GemmBLayout::KN}, {"nk", GemmBLayout::NK}},
                                  "how B is stored: kn (K x N, B[k][n]) or nk (N x K, W[n][k], as PyTorch's "
                                  "nn.Linear keeps its weight: out = A W^T)"};
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
                             "cores); tf32-truncated (f32 data as the tensor cores read it, the top 19 bits: "
                             "no copies round it first); bf16 (bfloat16) or f16 (IEEE half) on "
                             "tensor cores; e4m3 or e5m2 "
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
      "weight that every input of the batch shares); b (B batched, one A). f32 (FFMA), tf32, bf16 or f16, "
      "without --split-k, --cluster-blocks or tuning (with --persistent-blocks on tensor cores: its blocks walk the "
      "batch's tiles)"};
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
      "Not with FP8, --epilogue=swiglu or tuning; with --batched, out's products "
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
      "columns). nm is an output view: not with FP8, --epilogue=swiglu or tuning; with "
      "--batched, out's products --batch_stride elements apart"};
  EnumParam<examples::Fp8Scales> scales{
      this, "scales", examples::Fp8Scales::None, kScales,
      "e4m3 and e5m2: what multiplies the f32 sum, before the bias and the activation: none; tensor (scale_a and "
      "scale_b, one f32 each in device memory, as cuBLASLt's scale pointers); row (scale_a[M], one f32 per row "
      "of A, and scale_b[N], one per row of B, i.e. per column of out)"};
  EnumParam<Type> out_dtype{this, "out-dtype", Float(32), kElementTypes,
                            "the element type of out: f32; bf16 or f16 (the f32 result rounded to "
                            "nearest even)"};
  GeneratorParam<int> tile_m{this,
                             "tile-m",
                             0,
                             "rows of out per thread block; 0 (default): chosen from the shape, "
                             "128 when the shape is left to run time",
                             0,
                             256};
  GeneratorParam<int> tile_n{this, "tile-n", 0, "columns of out per thread block; 0: chosen from the shape", 0, 256};
  GeneratorParam<int> reg_m{this,
                            "reg-m",
                            0,
                            "rows of out per thread, in registers (threads per block: "
                            "tile-m/reg-m by tile-n/reg-n); 0: the tiling's choice (8, or 4 for a "
                            "small-M tile)",
                            0,
                            16};
  GeneratorParam<int> reg_n{this, "reg-n", 0, "columns of out per thread, in registers; 0: the tiling's choice", 0, 16};
  GeneratorParam<int> split_k{this,
                              "split-k",
                              1,
                              "blocks the reduction is split across (split_k): each computes a slice of K, "
                              "the last block of a tile adds the slices and runs the epilogue; the launcher "
                              "then takes a workspace (NAME_workspace_bytes). 1: no split; 0: chosen from "
                              "the shape and --sm-count (needs --M, --N and --K)",
                              0,
                              256};
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
  GeneratorParam<int> warp_m{this, "warp-m", 0, "tensor cores: rows of out per warp; 0: chosen with the tile", 0, 256};
  GeneratorParam<int> warp_n{this, "warp-n", 0, "tensor cores: columns of out per warp; 0: chosen with the tile",
                             0,    256};
  EnumParam<MmaFamily> mma{this, "mma", MmaFamily::Auto, kMmaFamilies,
                           "tensor cores: warp (mma.sync, sm_80 and later), warpgroup (Hopper's wgmma, "
                           "sm_90a only, tf32, bf16, f16, e4m3 and e5m2; warp-m x warp-n is then the 64 x N "
                           "tile of a "
                           "warpgroup of 4 warps), or auto (the default): what the benchmark runs for the "
                           "target, warpgroup on sm_90a (but warp for tf32 with --M at most 128) and warp "
                           "elsewhere"};

  /// --mma with auto resolved for the target.
  MmaFamily mma_family() const;
  GeneratorParam<int> stages{this,
                             "stages",
                             0,
                             "tiles of A and B in shared memory, one K step each (f32: 1 to 8, 1: one tile, "
                             "2: double buffering, 3 or more: a cp.async pipeline; tensor cores: 2 to 8); 0: the "
                             "tiling's choice",
                             0,
                             8};
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
  GeneratorParam<int> producer_warps{this,
                                     "producer-warps",
                                     0,
                                     "with the TMA's copies: warps of their own issue them (warp specialization, "
                                     "1 to 4, past the MMA warps in the block); 0: the MMA warps' first thread",
                                     0,
                                     4};
  GeneratorParam<int> producer_registers{this,
                                         "producer-registers",
                                         0,
                                         "with --producer-warps=4: register reallocation, the producer warpgroup "
                                         "keeps this many registers per thread (24 to 256, a multiple of 8) and "
                                         "the MMA warps take the rest (setmaxnreg); 0: none",
                                         0,
                                         256};
  GeneratorParam<int> cluster_blocks{this,
                                     "cluster-blocks",
                                     0,
                                     "with the TMA's copies: consecutive block rows in clusters of this many (2 to "
                                     "8), which share B's tiles (multicast; sm_90a; with --persistent-blocks, a "
                                     "multiple of it, the clusters walk the tiles together); 0: none",
                                     0,
                                     8};
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
  EnumParam<ConsumerSchedule> consumer_schedule{
      this,
      "consumer-schedule",
      ConsumerSchedule::Together,
      {{"together", ConsumerSchedule::Together}, {"ping-pong", ConsumerSchedule::PingPong}},
      "with --persistent-blocks and --producer-warps on the warpgroup MMA: how the MMA warps share a block's tiles "
      "(gpu_consumer_schedule): together (all of them on each tile) or ping-pong (two groups of one warpgroup, a "
      "128-row warp tile as large as the block's, take the tiles in turn, one group's epilogue beside the other's "
      "main loop; --tile-stores=direct)"};
  GeneratorParam<bool> tma_padded_copies{
      this, "tma-padded-copies", false,
      "with the TMA's copies: copy A and B first (a kernel each) into workspaces whose rows are padded to 128-byte "
      "multiples (for tf32 also rounded to tf32, B transposed), and let the TMA read those; on by itself for tf32 "
      "and where --N or --K is given and its rows are not whole 16 bytes; for one of them alone where --M, --N "
      "and --K are given, its rows split the L2's 32-byte sectors and at least 16 tiles read it. Left out, sizes "
      "given at run time copy an input on the launches whose rows of it are not whole 16 bytes, and the TMA reads "
      "it as it lies on the others; =false: every thread's cp.async copies, in the kernel beside the TMA's, take "
      "those launches instead"};
  GeneratorParam<std::string> warp_layout{this, "warp-layout", "",
                                          "f32: each warp covers RxC of the block's threads (R * C = 32, e.g. "
                                          "4x8); empty: row order (gpu_threads)"};
  GeneratorParam<int> min_blocks_per_sm{this,
                                        "min-blocks-per-sm",
                                        -1,
                                        "blocks each multiprocessor should hold (ptxas caps registers to fit); "
                                        "0: no cap; -1 (default): the tiling's choice",
                                        -1,
                                        32};
  GeneratorParam<int> block_groups{this,
                                   "block-groups",
                                   0,
                                   "run the blocks in groups of this many block rows (gpu_block_groups); 0: row "
                                   "by row",
                                   0,
                                   1024};
  GeneratorParam<int> persistent_blocks{this,
                                        "persistent-blocks",
                                        0,
                                        "tensor-core schedules: run the tiles on at most this many blocks, each "
                                        "walking tiles a grid apart (gpu_persistent_blocks); 0: a block per tile",
                                        0,
                                        65535};
  GeneratorParam<int> sm_count{this,
                               "sm-count",
                               0,
                               "multiprocessors the shape-aware choices (the tile, --split-k=0) give work to; "
                               "0: those of the --target's GPU (132 for sm_90a, the H200's)",
                               0,
                               1024};
  GeneratorParam<bool> double_buffered{this, "double-buffered", true,
                                       "stage the next K step while computing this one (double_buffered); "
                                       "false: one buffer per input, the copy and the compute in turn"};
  GeneratorParam<bool> async_copy{this, "async-copy", true,
                                  "f32: copy A and B into shared memory with cp.async (sm_80+), not through "
                                  "registers (tensor-core schedules always do)"};
  GeneratorParam<int> a_padding{this,
                                "a-padding",
                                -1,
                                "elements after each staged row of A, against bank conflicts; -1: the tiling's "
                                "choice (4 for f32, 8 for warp MMA; warpgroup MMA swizzles instead and takes 0)",
                                -1,
                                64};
  GeneratorParam<int> b_padding{this,
                                "b-padding",
                                -1,
                                "tensor cores: elements after each staged row of B; -1: the tiling's choice (8 for "
                                "warp MMA, 0 for warpgroup MMA)",
                                -1,
                                64};

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
  GeneratorParam<int> autotune_candidates{
      this, "autotune-candidates", 50, "with --autotune: legal candidates compiled and timed at most", 1, 10000};

  // --split-k, with 0 resolved from the shape (which must then be fixed).
  int chosen_split(int block_m, int block_n, int step, int blocks_per_sm) const;

  // --warp-layout=RxC into the tiling (schedule_gemm checks the shape).
  void parse_warp_layout(GemmTiling *tiling) const;

  /// The problem the tuning database and the autotuner key on.
  GemmProblem tuning_problem() const;

  /// The tiling from the tuning database or the autotuner.
  GemmCandidate tuned_candidate(const GemmProblem &problem) const;

  bool fp8() const { return dtype == InputType::E4M3 || dtype == InputType::E5M2; }

  /// The tensor-core tiling for `kind`: the library's default for the shape,
  /// with every knob the flags set.
  MmaTiling mma_tiling(MmaKind kind) const;

  /// `tiling` with every knob the flags set.
  MmaTiling with_knob_flags(MmaTiling tiling) const;

  /// --batched, --batch, --views, --lda, --ldb: what a batch or a view runs
  /// with (GemmLayouts.h).
  void check_layout_flags() const;

  /// The flags of the single GEMM's epilogue, layout, split and tuning,
  /// which the SwiGLU refuses when given (check_swiglu_gemm_flags), and of
  /// the FFMA schedule, which it does not have.
  std::vector<const GeneratorParamBase *> gemm_only_params() const;

  /// A SwiGLU's regenerating command line leaves out the single GEMM's flags.
  bool uses_param(const GeneratorParamBase &param) const override;
};

} // namespace coalesce::aot_gemm
