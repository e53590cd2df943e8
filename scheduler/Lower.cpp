#include "scheduler/Lower.h"

#include "dsl/CompileProfile.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/AlternateConsumerWarpgroups.h"
#include "scheduler/BuildLoopNest.h"
#include "scheduler/CheckAlgorithm.h"
#include "scheduler/CheckClusters.h"
#include "scheduler/CheckGpuLimits.h"
#include "scheduler/CheckGpuStructure.h"
#include "scheduler/CheckInputReads.h"
#include "scheduler/CheckMirroredLoops.h"
#include "scheduler/CheckMma.h"
#include "scheduler/CheckNames.h"
#include "scheduler/CheckSplitK.h"
#include "scheduler/CheckStaging.h"
#include "scheduler/CheckThreadOwnership.h"
#include "scheduler/CheckUnrollSize.h"
#include "scheduler/ClampInputLoads.h"
#include "scheduler/CombineSlicesKernel.h"
#include "scheduler/Environment.h"
#include "scheduler/FlattenStorage.h"
#include "scheduler/FoldBiasIntoInit.h"
#include "scheduler/FuseGpuThreadLoops.h"
#include "scheduler/FuseReductionNests.h"
#include "scheduler/GroupGpuBlocks.h"
#include "scheduler/HoistConsumerGroupGuards.h"
#include "scheduler/HoistLoads.h"
#include "scheduler/InferDomain.h"
#include "scheduler/InlineFuncs.h"
#include "scheduler/InputReads.h"
#include "scheduler/LoopNames.h"
#include "scheduler/LowerTmaPipelines.h"
#include "scheduler/PadTmaInputs.h"
#include "scheduler/PartitionFullTiles.h"
#include "scheduler/PersistentBlocks.h"
#include "scheduler/PipelineStagedCopies.h"
#include "scheduler/ReallocateRegisters.h"
#include "scheduler/ResolveSchedule.h"
#include "scheduler/RollHostLoops.h"
#include "scheduler/SharedTileLayout.h"
#include "scheduler/Simplify.h"
#include "scheduler/SplitReductionAcrossBlocks.h"
#include "scheduler/StageInShared.h"
#include "scheduler/StageOutputTiles.h"
#include "scheduler/StartMmaAtZero.h"
#include "scheduler/StripStagePrefixes.h"
#include "scheduler/TensorizeMma.h"
#include "scheduler/TmaInputs.h"
#include "scheduler/UnrollLoops.h"
#include "scheduler/UnverifiedFeatures.h"
#include "scheduler/VerifyEpiloguePlacement.h"
#include "scheduler/VerifyMmaOperands.h"
#include "scheduler/VerifyPipelines.h"
#include "scheduler/VerifyTensorCopies.h"

#include <algorithm>
#include <map>
#include <cstdlib>
#include <iostream>

namespace coalesce {

namespace {

// Stores between a fragment's read and its first use. Measured on the H200
// with the default GEMM schedule (8x8 register blocks, 8 K steps, 512
// stores per run): 16 -> 0.81x cuBLAS, 32 or 64 -> 0.86x, 256 and more ->
// 0.885x (a plateau): reading the whole step's fragments early and leaving
// the interleaving to ptxas works best.
constexpr int kLoadLookahead = 256;

void log(const char *pass, const Stmt &s) {
  static const bool dump = [] {
    const char *flag = std::getenv("COALESCE_DUMP_PASSES");
    return flag && *flag && std::string(flag) != "0";
  }();
  if (dump)
    std::cerr << "=== after " << pass << " ===\n" << s << "\n";
}

// The front end's checks and rewrites, on private copies of the Funcs.
Environment prepare(const Func &output) {
  PhaseTimer timer("lower: front end");
  // Each step is attributed by name, so an error it raises carries its rule
  // (UserError::rule).
  Environment env = attributed_to("make_environment", [&] { return make_environment(output); });
  attributed_to("check_names", [&] { check_names(env); }); // every user name denotes one thing; reserved names are not taken
  attributed_to("check_algorithm", [&] { check_algorithm(env); }); // updates are reductions; Funcs called at their own coordinates
  attributed_to("resolve_schedule", [&] { resolve_schedule(env); }); // where each Func is computed; reduction order kept
  // A Func computed at a site runs on the consumer's loops, as the consumer has them.
  attributed_to("check_mirrored_loops", [&] { check_mirrored_loops(env); });
  attributed_to("inline_funcs", [&] { inline_funcs(env); }); // needs placements
  attributed_to("check_staging", [&] { check_staging(env); }); // each staged input's pipeline, and one per loop
  attributed_to("check_mma", [&] { check_mma(env); }); // after inlining: the update is what the instruction computes
  attributed_to("check_split_k", [&] { check_split_k(env); }); // after inlining, likewise: the split sum is the one that runs
  attributed_to("check_clusters", [&] { check_clusters(env); }); // gpu_cluster's loop
  // After inlining, so out = gelu(biased) with biased = acc + b folds too.
  attributed_to("fold_bias_into_init", [&] { fold_bias_into_init(env); });
  // After folding: a warpgroup MMA's sum starts from 0, its initial value
  // added where it is read (ptxas serializes MMAs that start from loads).
  attributed_to("start_mma_accumulators_at_zero", [&] { start_mma_accumulators_at_zero(env); });
  attributed_to("infer_domain", [&] { infer_domain(env); });
  attributed_to("check_input_reads", [&] { check_input_reads(env); }); // needs the domain
  return env;
}

// The passes every target shares; the result has serial semantics.
Stmt lower_serial(const Environment &env, const ResourceBudget &budget) {
  PhaseTimer timer("lower: serial passes");
  Stmt s = attributed_to("build_loop_nest", [&] { return build_loop_nest(env); });
  log("build_loop_nest", s);
  // Reductions fused with fuse_reduction_with: one nest for their updates.
  s = attributed_to("fuse_reduction_nests", [&] { return fuse_reduction_nests(s, env); });
  log("fuse_reduction_nests", s);
  // split_k's slices: a loop of blocks over the slices, the partial sums and
  // the last block's combine, before the epilogue (the tile scheduler's
  // part of the nest; nothing before it differs for a split).
  s = attributed_to("split_reduction_across_blocks", [&] { return split_reduction_across_blocks(s, env); });
  log("split_reduction_across_blocks", s);
  // The order of the tiles, then which block walks which (a persistent
  // grid's tile loop): before staging, so that a pipeline may run across a
  // block's tiles. Both permute whole tiles, so the checks below see every
  // tile's work as before.
  s = attributed_to("group_gpu_blocks", [&] { return group_gpu_blocks(s, env); });
  log("group_gpu_blocks", s);
  s = attributed_to("make_blocks_persistent", [&] { return make_blocks_persistent(s, env); });
  log("make_blocks_persistent", s);
  // Staging reads the Input calls' coordinates, so it runs before they
  // become clamped loads.
  s = attributed_to("stage_inputs_in_shared", [&] { return stage_inputs_in_shared(s, env); });
  log("stage_inputs_in_shared", s);
  // The loops it left for two buffers or a pipeline: their copies ahead of
  // the reads (the TMA's left to the next pass, with this one's cp.async
  // pipeline as its fallback).
  s = attributed_to("pipeline_staged_copies", [&] { return pipeline_staged_copies(s, env); });
  log("pipeline_staged_copies", s);
  // The staging loops the TMA copies: their mbarrier pipelines, producer
  // warps, multicast, and pipelines across a persistent block's tiles.
  s = attributed_to("lower_tma_pipelines", [&] { return lower_tma_pipelines(s, env); });
  log("lower_tma_pipelines", s);
  // ConsumerSchedule::PingPong: two groups of MMA warps taking the tiles
  // in turn, their main loops ordered by named barriers.
  s = attributed_to("alternate_consumer_warpgroups", [&] { return alternate_consumer_warpgroups(s, env); });
  log("alternate_consumer_warpgroups", s);
  // At the points of the producer warps' program it marked: their
  // registers handed to the MMA warps, and their exit (or nothing).
  s = attributed_to("reallocate_registers", [&] { return reallocate_registers(s, env); });
  log("reallocate_registers", s);
  s = attributed_to("clamp_input_loads", [&] { return clamp_input_loads(s); });
  log("clamp_input_loads", s);
  // On every target, so the CPU runs the statement the GPU runs.
  s = attributed_to("tensorize_mma", [&] { return tensorize_mma(s, env); });
  log("tensorize_mma", s);
  attributed_to("verify_epilogue_placement", [&] { verify_epilogue_placement(s, env); });
  // Before thread fusion, which drops per-thread dimensions.
  attributed_to("check_thread_ownership", [&] { check_thread_ownership(s, env); });
  attributed_to("check_gpu_limits", [&] { check_gpu_limits(s, budget, env.output().schedule.min_blocks_per_sm); });
  // On every target, before unroll_loops makes the copies.
  attributed_to("check_unroll_size", [&] { check_unroll_size(s); });
  // The copies run before the nest that reads them: nests of their own.
  s = attributed_to("pad_tma_inputs", [&] { return pad_tma_inputs(s, env); });
  log("pad_tma_inputs", s);
  s = simplify(s);
  log("simplify", s);
  s = attributed_to("partition_full_tiles", [&] { return partition_full_tiles(s, env); });
  log("partition_full_tiles", s);
  // On the full-tile copy partition_full_tiles made: its stores are the
  // ones without guards.
  s = attributed_to("stage_output_tiles", [&] { return stage_output_tiles(s, env); });
  log("stage_output_tiles", s);
  // Again where a tile was staged: it adds shared memory.
  if (env.output().schedule.tile_stores != TileStores::Direct)
    attributed_to("check_gpu_limits", [&] { check_gpu_limits(s, budget, env.output().schedule.min_blocks_per_sm); });
  // split_k's combine in a kernel of its own, after the output's: a nest
  // the passes above, which find the output's tiles, never see.
  s = attributed_to("add_slice_combine_kernel", [&] { return add_slice_combine_kernel(s, env); });
  log("add_slice_combine_kernel", s);
  return s;
}

// The verifiers of the finished serial nest: the nest the GPU path starts
// from and the CPU runs (so the CPU run rejects what the GPU path would).
// They only read it, and it alone (with the environment it was lowered
// from) decides what they find, so a nest that passed them once passes
// again: a PTX cache hit skips them (lower_gpu_nest_unverified).
void verify_serial_nest(const Stmt &s, const Environment &env) {
  PhaseTimer timer("lower: verifiers");
  // The MMA statements as the later passes (partitions, staged outputs) left them.
  attributed_to("verify_mma_operands", [&] { verify_mma_operands(s); });
  // Again, after the passes that move the epilogue's store (into a copy-out
  // loop, into a kernel of its own): still outside every reduction loop.
  attributed_to("verify_epilogue_placement", [&] { verify_epilogue_placement(s, env); });
  attributed_to("check_gpu_structure", [&] { check_gpu_structure(s, env.output().name); });
  attributed_to("verify_tensor_copies", [&] { verify_tensor_copies(s, env); });
  attributed_to("verify_pipelines", [&] { verify_pipelines(s, env.output().name); });
}

// The serial passes, then their verifiers.
Stmt lower_verified(const Environment &env, const ResourceBudget &budget) {
  Stmt s = lower_serial(env, budget);
  verify_serial_nest(s, env);
  return s;
}

// Flattening comes after thread fusion (which drops per-thread dimensions
// of register arrays) and before unrolling (so unrolled copies index with
// constants that fold).
Stmt finish(Stmt s, const std::vector<Argument> &args) {
  {
    PhaseTimer timer("lower: flatten_storage");
    s = flatten_storage(s, args);
  }
  log("flatten_storage", s);
  {
    PhaseTimer timer("lower: unroll_loops");
    s = unroll_loops(s);
  }
  log("unroll_loops", s);
  {
    PhaseTimer timer("lower: simplify");
    s = simplify(s);
  }
  log("simplify", s);
  // After simplification, so that equal loads print (and match) alike.
  {
    PhaseTimer timer("lower: hoist_loads");
    s = hoist_loads(s, kLoadLookahead);
  }
  log("hoist_loads", s);
  PhaseTimer timer("lower: strip_stage_prefixes");
  s = strip_stage_prefixes(s);
  log("strip_stage_prefixes", s);
  return s;
}

// The block loop the output's kernel is launched in clusters along: the
// clustered loop (gpu_cluster), or on a persistent grid, whose blocks walk
// the tiles by whole clusters (PersistentBlocks.h), the grid's own loop.
std::string clustered_block_loop(const Stmt &serial, const FuncContents &output) {
  std::string clustered = cluster_loop_name(output);
  if (clustered.empty() || output.schedule.persistent_blocks == 0)
    return clustered;
  struct Find : IRVisitor {
    std::string block, grid; // the block loop being visited; the one around the tile loop
    using IRVisitor::visit;
    void visit(const For *op) override {
      if (op->role == LoopRole::PersistentTiles)
        grid = block;
      std::string outer = block;
      if (op->for_kind == ForKind::GpuBlock)
        block = op->name;
      IRVisitor::visit(op);
      block = outer;
    }
  } find;
  find.visit_stmt(serial);
  COALESCE_INTERNAL_ASSERT(!find.grid.empty(), "a persistent grid in clusters without its block loop");
  return find.grid;
}

std::vector<Argument> arguments_of(const Environment &env) {
  std::vector<Argument> args;
  for (const auto &[name, input] : env.inputs)
    args.push_back(Argument{name, Argument::Kind::Buffer, input->type, input->extents, false, input_reads(env, name),
                            false, input->strides});
  args.push_back(Argument{env.output().name,
                          Argument::Kind::Buffer,
                          env.output().type,
                          env.domain,
                          true,
                          {},
                          false,
                          env.output().output_strides});
  for (const std::string &param : env.params)
    args.push_back(Argument{param, Argument::Kind::Scalar, Int(32), {}, false, {}});
  for (const Argument &workspace : workspace_arguments(env))
    args.push_back(workspace);
  for (const Argument &workspace : tma_padded_workspaces(env))
    args.push_back(workspace);
  return args;
}

} // namespace

Stmt lower_loop_nest(const Func &output, const ResourceBudget &budget) {
  Environment env = prepare(output);
  return strip_stage_prefixes(lower_verified(env, budget));
}

std::vector<Argument> lowered_arguments(const Func &output) { return arguments_of(prepare(output)); }

LoweredFunc lower_for_host(const Func &output, const ResourceBudget &budget) {
  Environment env = prepare(output);
  LoweredFunc lowered{output.name(), arguments_of(env), Stmt()};
  // The host runs the large unrolled nests as loops: unrolling them only
  // costs its compile time (RollHostLoops.h).
  Stmt serial = lower_verified(env, budget);
  {
    PhaseTimer timer("lower: roll_large_unrolled_loops");
    serial = roll_large_unrolled_loops(serial);
  }
  lowered.body = finish(serial, lowered.args);
  return lowered;
}

GpuNest lower_gpu_nest_unverified(const Func &output, const ResourceBudget &budget) {
  auto env = std::make_shared<const Environment>(prepare(output));
  GpuNest nest;
  nest.name = output.name();
  nest.args = arguments_of(*env);
  nest.min_blocks_per_sm = env->output().schedule.min_blocks_per_sm;
  nest.cluster_blocks = env->output().schedule.cluster_blocks;
  nest.serial = lower_serial(*env, budget);
  nest.cluster_loop = clustered_block_loop(nest.serial, env->output());
  nest.unverified_on_gpu = unverified_features(*env);
  nest.unverified = std::move(env);
  return nest;
}

GpuNest lower_gpu_nest(const Func &output, const ResourceBudget &budget) {
  GpuNest nest = lower_gpu_nest_unverified(output, budget);
  verify_gpu_nest(nest);
  return nest;
}

void verify_gpu_nest(GpuNest &nest) {
  if (!nest.unverified)
    return;
  verify_serial_nest(nest.serial, *nest.unverified);
  nest.unverified.reset();
}

namespace {

// The tensor maps a kernel's TensorCopy statements read, in first-use order.
std::vector<TensorMapParam> tensor_maps_of(const Stmt &body) {
  struct Collect : IRVisitor {
    std::vector<TensorMapParam> maps;
    using IRVisitor::visit;
    void visit(const TensorCopy *op) override {
      bool known = std::any_of(maps.begin(), maps.end(), [&](const TensorMapParam &m) {
        return m.input == op->input && m.box == op->issued_box();
      });
      if (!known)
        maps.push_back(TensorMapParam{op->input, op->issued_box()});
    }
  } collect;
  collect.visit_stmt(body);
  return collect.maps;
}

// The buffer arguments a kernel's vector copies store to or read from, with
// the vectors' bytes: their pointers must be aligned to them.
std::vector<std::pair<std::string, int>> aligned_buffers_of(const Stmt &body, const std::vector<Argument> &args) {
  struct Collect : IRVisitor {
    std::map<std::string, int> bytes;
    using IRVisitor::visit;
    void visit(const Store *op) override {
      const auto *copy = op->value.as<Call>();
      if (copy && copy->intrinsic == Intrinsic::LoadVector) {
        int vector = static_cast<int>(*as_const_int(copy->args[1])) * std::max(1, copy->type.bytes());
        for (const std::string &buffer : {op->buffer, copy->args[0].as<Load>()->buffer})
          bytes[buffer] = std::max(bytes[buffer], vector);
      }
      IRVisitor::visit(op);
    }
  } collect;
  collect.visit_stmt(body);
  std::vector<std::pair<std::string, int>> aligned;
  for (const auto &[buffer, bytes] : collect.bytes)
    if (std::any_of(args.begin(), args.end(), [&](const Argument &a) { return a.name == buffer && a.is_buffer(); }))
      aligned.emplace_back(buffer, bytes);
  return aligned;
}

} // namespace

// The last step runs at launch, not here: specialize_sizes
// (scheduler/SpecializeSizes.h) derives from this program the variant for
// sizes that are multiples of 16, which Pipeline::gpu_executable compiles
// for the launches that take it.
GpuProgram finish_gpu_program(const GpuNest &nest) {
  if (nest.unverified)
    verify_serial_nest(nest.serial, *nest.unverified);
  GpuProgram program{nest.name, nest.args, {}, nest.unverified_on_gpu};
  {
    PhaseTimer timer("lower: GPU thread fusion");
    program.kernels = fuse_gpu_thread_loops(nest.serial, nest.name);
  }
  for (GpuKernel &kernel : program.kernels) {
    log("fuse_gpu_thread_loops", kernel.body);
    kernel.body = finish(kernel.body, program.args);
    // Each group of ping-pong's MMA warps skips the other's tiles at once.
    kernel.body = hoist_consumer_group_guards(kernel.body);
    log("hoist_consumer_group_guards", kernel.body);
    // Tiles that share bytes still live apart after the later passes.
    if (kernel.dynamic_shared)
      verify_shared_tile_layout(kernel.body, kernel.name, kernel.shared_offsets);
    kernel.min_blocks_per_sm = nest.min_blocks_per_sm;
    // The output's kernel is launched in clusters along its clustered
    // block loop (check_clusters made sure it is one).
    for (int d = 0; d < 3; ++d)
      if (nest.cluster_blocks > 0 && kernel.block_loops[d] == nest.cluster_loop)
        kernel.cluster[d] = nest.cluster_blocks;
    kernel.tensor_maps = tensor_maps_of(kernel.body);
    kernel.aligned_buffers = aligned_buffers_of(kernel.body, program.args);
    for (Expr &extent : kernel.grid)
      extent = simplify(extent);
  }
  return program;
}

GpuProgram lower_for_gpu(const Func &output, const ResourceBudget &budget) {
  return finish_gpu_program(lower_gpu_nest(output, budget));
}

} // namespace coalesce
