#include "bench/MainJobOptions.h"

#include "runtime/Version.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace coalesce::main_job {

bench::Precision precision_of(const Options &options) {
  if (options.dtype == BFloat(16))
    return bench::Precision::BF16;
  if (options.dtype == Float(16))
    return bench::Precision::F16;
  return options.tensor_cores ? bench::Precision::TF32 : bench::Precision::FP32;
}

void usage_error(const std::string &message) {
  std::fprintf(stderr, "coalesce-main: %s\n(coalesce-main --help lists the flags)\n", message.c_str());
  std::exit(2);
}

namespace {

Type parse_dtype(const std::string &text) {
  if (text == "f32")
    return Float(32);
  if (text == "bf16")
    return BFloat(16);
  if (text == "f16")
    return Float(16);
  usage_error("bad value '" + text + "' for --dtype: expected f32, bf16 or f16");
}

int parse_extent(const std::string &flag, const std::string &text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    usage_error("bad value '" + text + "' for " + flag + ": expected a positive integer");
  long value = std::strtol(text.c_str(), nullptr, 10);
  if (value <= 0 || value > (1 << 20))
    usage_error("bad value '" + text + "' for " + flag + ": expected an integer from 1 to 1048576");
  return static_cast<int>(value);
}

} // namespace

// The flags, parsed by llvm::cl as coalesce-aot's are (--M=4096 or --M 4096,
// --help, errors naming the flag). Values are strings checked here, so that
// a bad one gets the same message whichever way it was written.
Options parse_options(int argc, char **argv) {
  namespace cl = llvm::cl;
  cl::OptionCategory category("coalesce-main options");
  cl::opt<std::string> m_flag("M", cl::desc("rows of A and out (default 4096 on the GPU, 256 on the CPU)"),
                              cl::value_desc("rows"), cl::cat(category));
  cl::opt<std::string> n_flag("N", cl::desc("columns of B and out (default 4096 on the GPU, 320 on the CPU)"),
                              cl::value_desc("columns"), cl::cat(category));
  cl::opt<std::string> k_flag("K", cl::desc("the reduction depth (default 4096 on the GPU, 200 on the CPU)"),
                              cl::value_desc("depth"), cl::cat(category));
  cl::opt<std::string> dtype_flag("dtype", cl::desc("the element type of A, B and out: f32, bf16 or f16 "
                                                    "(the bias and the arithmetic stay f32)"),
                                  cl::value_desc("type"), cl::init("f32"), cl::cat(category));
  cl::opt<bool> tensor_cores_flag("tensor-cores", cl::desc("run the warp-MMA schedule (tf32 for f32 inputs)"),
                                  cl::cat(category));
  cl::opt<bool> wgmma_flag("wgmma", cl::desc("run on Hopper's warpgroup MMA (sm_90a; f32 inputs rounded to tf32)"),
                           cl::cat(category));
  cl::opt<bool> cp_async_flag("cp-async", cl::desc("with --wgmma: copy the tiles with every thread's cp.async "
                                                  "instead of the tensor memory accelerator (TMA), the default"),
                              cl::cat(category));
  cl::opt<std::string> producer_warps_flag(
      "producer-warps", cl::desc("with --wgmma: warps of their own issue the TMA copies (warp specialization, "
                                 "1 to 4; 0: the MMA warps' first thread, the default)"),
      cl::value_desc("count"), cl::cat(category));
  cl::opt<std::string> producer_registers_flag(
      "producer-registers", cl::desc("with --producer-warps=4: register reallocation, the producer warpgroup keeps "
                                     "this many registers per thread (24 to 256, a multiple of 8) and the MMA "
                                     "warps take the rest (setmaxnreg); 0: none, the default"),
      cl::value_desc("count"), cl::cat(category));
  cl::opt<std::string> persistent_blocks_flag(
      "persistent-blocks", cl::desc("with --tensor-cores or --wgmma: run the tiles on at most this many blocks, "
                                    "each walking tiles a grid apart (gpu_persistent_blocks); 0: a block per "
                                    "tile, the default"),
      cl::value_desc("count"), cl::cat(category));
  cl::opt<std::string> split_k_flag(
      "split-k",
      cl::desc("with --tensor-cores or --wgmma: split K across this many blocks per tile (split_k, "
               "deterministic; 1: no split); default: the tiling's"),
      cl::value_desc("slices"), cl::cat(category));
  cl::opt<std::string> split_k_tail_flag(
      "split-k-tail",
      cl::desc("with --split-k: split only the tiles of the last this many block rows, the others "
               "whole (split_k_tail; 0: every tile)"),
      cl::value_desc("rows"), cl::cat(category));
  cl::opt<std::string> tile_stores_flag(
      "tile-stores",
      cl::desc("with --tensor-cores or --wgmma: how blocks store their output tiles: direct (each "
               "thread its elements), shared (through a shared-memory tile, in 16-byte vectors; "
               "gpu_tile_stores) or sums (the sums through shared memory, the epilogue computed in "
               "the copy, a vector at a time); default: the tiling's"),
      cl::value_desc("direct|shared|sums"), cl::cat(category));
  cl::opt<std::string> consumer_schedule_flag(
      "consumer-schedule",
      cl::desc("with --wgmma, --persistent-blocks and --producer-warps: how the MMA warps share a block's tiles "
               "(gpu_consumer_schedule): together (the default) or ping-pong (two groups of one warpgroup take "
               "the tiles in turn; --tile-stores=direct)"),
      cl::value_desc("together|ping-pong"), cl::cat(category));
  cl::opt<std::string> cluster_blocks_flag(
      "cluster-blocks",
      cl::desc("with --wgmma and the TMA: run consecutive block rows in clusters of this many "
               "(2 to 8), which share B's tiles (gpu_cluster, TmaCopies::multicast; with "
               "--persistent-blocks, a multiple of it, the clusters walk the tiles together); 0: "
               "none, the default"),
      cl::value_desc("count"), cl::cat(category));
  cl::opt<std::string> block_groups_flag(
      "block-groups", cl::desc("run the blocks in groups of this many block rows (gpu_block_groups; 0: row by "
                               "row, the default)"),
      cl::value_desc("rows"), cl::cat(category));
  cl::opt<std::string> mma_tiling_flag(
      "mma-tiling", cl::desc("the tensor-core tiling, BMxBNxWMxWNxKSxMB[xST] (block, warp tile, k step, "
                             "blocks per SM, pipeline stages); implies --tensor-cores"),
      cl::value_desc("tiling"), cl::cat(category));
  cl::opt<std::string> stages_flag("stages", cl::desc("FFMA schedule: tiles of A and B in shared memory per K step "
                                                    "(1 to 8; 2, double buffered, is the default)"),
                                   cl::value_desc("count"), cl::cat(category));
  cl::opt<bool> zero_fill_flag(
      "zero-fill",
      cl::desc("FFMA schedule: zero-fill the copied tiles, so a ragged K's last step runs in the one k "
               "loop (GemmTiling::zero_fill; not yet checked on a GPU: the library refuses it there "
               "unless COALESCE_ALLOW_UNVERIFIED=1)"),
      cl::cat(category));
  cl::opt<std::string> warp_layout_flag(
      "warp-layout", cl::desc("FFMA schedule: each warp covers RxC of the block's threads (R * C = 32; default: "
                              "row order)"),
      cl::value_desc("RxC"), cl::cat(category));
  cl::opt<std::string> tuning_db_flag(
      "tuning-db", cl::desc("take the tiling from this tuning database (docs/tuning.md): the entry for the "
                            "problem and this GPU, else the nearest of its shape class, else the default, with a "
                            "note; with --autotune, the result is merged into it"),
      cl::value_desc("path"), cl::cat(category));
  cl::opt<bool> autotune_flag("autotune", cl::desc("search the tiling on this GPU first (legality checks, parallel "
                                                   "compilation, checked timings), then run the winner"),
                              cl::cat(category));
  cl::opt<std::string> autotune_candidates_flag(
      "autotune-candidates", cl::desc("with --autotune: legal candidates compiled and timed at most (default 50)"),
      cl::value_desc("count"), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  const char *overview =
      "the fused GEMM + bias + GELU: prints its loop nest and ptxas report, then times it\n"
      "against cuBLAS of the same precision on the GPU, or checks it on the CPU when there is no GPU\n"
      "(COALESCE_DISABLE_GPU=1 forces the CPU path). --dtype=bf16|f16 makes A, B and out\n"
      "16-bit; the arithmetic stays FP32, on the exactly widened inputs.\n";
  std::string errors;
  llvm::raw_string_ostream error_stream(errors);
  print_version_as("coalesce-main");
  if (!cl::ParseCommandLineOptions(argc, argv, overview, &error_stream))
    usage_error(without_program_prefix(llvm::StringRef(errors).trim().str(), argv[0]));

  Options options;
  struct Extent {
    cl::opt<std::string> &flag;
    int &value;
  };
  for (Extent extent : {Extent{m_flag, options.shape.M}, Extent{n_flag, options.shape.N},
                        Extent{k_flag, options.shape.K}})
    if (extent.flag.getNumOccurrences()) {
      extent.value = parse_extent("--" + extent.flag.ArgStr.str(), extent.flag);
      options.shape_given = true;
    }
  options.dtype = parse_dtype(dtype_flag);
  options.tensor_cores = tensor_cores_flag || wgmma_flag;
  options.warpgroup = wgmma_flag;
  options.wgmma.cp_async = cp_async_flag;
  if (producer_warps_flag.getNumOccurrences()) {
    options.wgmma.producer_warps =
        producer_warps_flag == "0" ? 0 : parse_extent("--producer-warps", producer_warps_flag);
    if (options.wgmma.producer_warps > 4)
      usage_error("bad value '" + producer_warps_flag + "' for --producer-warps: expected 0 to 4");
    if (!options.warpgroup || options.wgmma.cp_async)
      usage_error("--producer-warps issues the TMA copies of the warpgroup MMA: give --wgmma, without --cp-async");
  }
  if (persistent_blocks_flag.getNumOccurrences()) {
    options.wgmma.persistent_blocks =
        persistent_blocks_flag == "0" ? 0 : parse_extent("--persistent-blocks", persistent_blocks_flag);
    if (!options.tensor_cores)
      usage_error("--persistent-blocks sizes the tensor-core schedule's grid: give --tensor-cores or --wgmma");
  }
  if (cluster_blocks_flag.getNumOccurrences()) {
    options.wgmma.cluster_blocks =
        cluster_blocks_flag == "0" ? 0 : parse_extent("--cluster-blocks", cluster_blocks_flag);
    if (options.wgmma.cluster_blocks == 1 || options.wgmma.cluster_blocks > 8)
      usage_error("bad value '" + cluster_blocks_flag + "' for --cluster-blocks: expected 0, or 2 to 8");
    if (!options.warpgroup || options.wgmma.cp_async)
      usage_error("--cluster-blocks shares the TMA copies of the warpgroup MMA: give --wgmma, without --cp-async");
  }
  if (split_k_flag.getNumOccurrences()) {
    options.wgmma.split_k = parse_extent("--split-k", split_k_flag);
    if (!options.tensor_cores)
      usage_error("--split-k splits the tensor-core schedule's reduction: give --tensor-cores or --wgmma");
  }
  if (split_k_tail_flag.getNumOccurrences()) {
    options.wgmma.split_k_tail = split_k_tail_flag == "0" ? 0 : parse_extent("--split-k-tail", split_k_tail_flag);
    if (options.wgmma.split_k < 2)
      usage_error("--split-k-tail splits the last block rows' tiles: give --split-k with 2 or more slices");
  }
  if (tile_stores_flag.getNumOccurrences()) {
    const TileStores *named = std::find_if(std::begin(kTileStores), std::end(kTileStores),
                                           [&](TileStores t) { return tile_stores_flag == tile_stores_name(t); });
    if (named == std::end(kTileStores))
      usage_error("bad value '" + tile_stores_flag + "' for --tile-stores: expected direct, shared or sums");
    if (!options.tensor_cores)
      usage_error("--tile-stores picks how the tensor-core schedule stores its tiles: give --tensor-cores or --wgmma");
    options.wgmma.tile_stores = *named;
  }
  if (consumer_schedule_flag.getNumOccurrences()) {
    const ConsumerSchedule *named =
        std::find_if(std::begin(kConsumerSchedules), std::end(kConsumerSchedules),
                     [&](ConsumerSchedule c) { return consumer_schedule_flag == consumer_schedule_name(c); });
    if (named == std::end(kConsumerSchedules))
      usage_error("bad value '" + consumer_schedule_flag + "' for --consumer-schedule: expected together or ping-pong");
    if (!options.warpgroup)
      usage_error("--consumer-schedule shares a persistent block's tiles between warpgroups: give --wgmma");
    options.wgmma.consumer_schedule = *named;
  }
  if (producer_registers_flag.getNumOccurrences()) {
    options.wgmma.producer_registers =
        producer_registers_flag == "0" ? 0 : parse_extent("--producer-registers", producer_registers_flag);
    if (options.wgmma.producer_registers != 0 && options.wgmma.producer_warps != 4)
      usage_error("--producer-registers reallocates the producer warpgroup's registers: give --producer-warps=4");
  }
  if (block_groups_flag.getNumOccurrences())
    options.block_groups = block_groups_flag == "0" ? 0 : parse_extent("--block-groups", block_groups_flag);
  if (mma_tiling_flag.getNumOccurrences()) {
    const std::string &text = mma_tiling_flag;
    for (size_t start = 0; start <= text.size();) {
      size_t x = text.find('x', start);
      std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
      options.mma_tiling.push_back(parse_extent("--mma-tiling", part));
      if (x == std::string::npos)
        break;
      start = x + 1;
    }
    if (options.mma_tiling.size() != 6 && options.mma_tiling.size() != 7)
      usage_error("--mma-tiling takes six or seven numbers, BMxBNxWMxWNxKSxMB[xST] (block, warp tile, k step, "
                  "blocks per SM, pipeline stages)");
    options.tensor_cores = true;
  }
  if (stages_flag.getNumOccurrences()) {
    options.ffma.stages = parse_extent("--stages", stages_flag);
    if (options.ffma.stages > 8)
      usage_error("bad value '" + stages_flag + "' for --stages: expected 1 to 8");
  }
  if (warp_layout_flag.getNumOccurrences()) {
    const std::string &text = warp_layout_flag;
    size_t x = text.find('x');
    if (x == std::string::npos)
      usage_error("bad value '" + text + "' for --warp-layout: expected RxC, e.g. 4x8");
    options.ffma.warp_rows = parse_extent("--warp-layout", text.substr(0, x));
    options.ffma.warp_cols = parse_extent("--warp-layout", text.substr(x + 1));
  }
  options.ffma.zero_fill = zero_fill_flag;
  if ((options.ffma.stages || options.ffma.warp_rows) && options.tensor_cores)
    usage_error("--stages and --warp-layout set the FFMA schedule; the tensor-core tiling's stages are the last "
                "number of --mma-tiling");
  if (options.ffma.zero_fill && (options.tensor_cores || options.dtype != Float(32)))
    usage_error("--zero-fill sets the f32 FFMA schedule's copies; the tensor-core schedules always zero-fill");
  options.tuning_db = tuning_db_flag;
  if (tuning_db_flag.getNumOccurrences() && options.tuning_db.empty())
    usage_error("--tuning-db is empty; give the path of a tuning database");
  options.autotune = autotune_flag;
  if (autotune_candidates_flag.getNumOccurrences())
    options.autotune_candidates = parse_extent("--autotune-candidates", autotune_candidates_flag);
  if (options.autotune || !options.tuning_db.empty()) {
    // The tuning picks these knobs; setting them too would be ambiguous.
    if (!options.mma_tiling.empty())
      usage_error("--mma-tiling sets the tiling that --tuning-db/--autotune choose; use one or the other");
    if (options.block_groups >= 0)
      usage_error("--block-groups sets a knob that --tuning-db/--autotune choose; use one or the other");
    if (options.wgmma.split_k >= 0)
      usage_error("--split-k sets a knob that --tuning-db/--autotune choose; use one or the other");
    if (options.ffma.stages || options.ffma.warp_rows || options.ffma.zero_fill)
      usage_error("--stages, --warp-layout and --zero-fill set knobs that --tuning-db/--autotune choose; use one or "
                  "the other");
    if (options.warpgroup || options.wgmma.cp_async)
      usage_error(std::string(options.wgmma.cp_async ? "--cp-async" : "--wgmma") +
                  " picks a knob of the MMA schedule, which --tuning-db/--autotune choose; leave it out");
    // bf16/f16 are tuned on tensor cores (warp or warpgroup MMA).
    if (options.dtype != Float(32))
      options.tensor_cores = true;
  }
  const Shape &s = options.shape;
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (int64_t(s.M) * s.K > limit || int64_t(s.K) * s.N > limit || int64_t(s.M) * s.N > limit)
    usage_error("shape " + std::to_string(s.M) + " x " + std::to_string(s.N) + " x " + std::to_string(s.K) +
                " has a matrix of more than 2^31 - 1 elements, beyond 32-bit indexing");
  return options;
}

} // namespace coalesce::main_job
