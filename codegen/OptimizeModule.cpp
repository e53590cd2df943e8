#include "codegen/OptimizeModule.h"

#include "dsl/CompileProfile.h"
#include "dsl/Error.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace coalesce {

void verify_module(const llvm::Module &module, const char *what) {
  std::string message;
  llvm::raw_string_ostream out(message);
  if (llvm::verifyModule(module, &out))
    internal_error("LLVM rejected the ", what, " module '", module.getName().str(), "': ", out.str());
}

namespace {

/// Times every pass and analysis into `profile` as "opt: NAME", exclusive of
/// the passes it runs (a pass manager is charged only its own overhead), so
/// the phases add up to the pipeline's time.
class PassTimer {
public:
  PassTimer(CompileProfile &profile, llvm::PassInstrumentationCallbacks &callbacks) : profile_(profile) {
    callbacks.registerBeforeNonSkippedPassCallback([this](llvm::StringRef, llvm::Any) { push(); });
    callbacks.registerAfterPassCallback(
        [this](llvm::StringRef name, llvm::Any, const llvm::PreservedAnalyses &) { pop(name); });
    callbacks.registerAfterPassInvalidatedCallback(
        [this](llvm::StringRef name, const llvm::PreservedAnalyses &) { pop(name); });
    callbacks.registerBeforeAnalysisCallback([this](llvm::StringRef, llvm::Any) { push(); });
    callbacks.registerAfterAnalysisCallback([this](llvm::StringRef name, llvm::Any) { pop(name); });
  }

private:
  using Clock = std::chrono::steady_clock;
  struct Open {
    Clock::time_point start;
    double start_cpu_ms;
    double children_ms = 0, children_cpu_ms = 0;
  };
  void push() { open_.push_back({Clock::now(), thread_cpu_ms()}); }
  void pop(llvm::StringRef name) {
    Open done = open_.back();
    open_.pop_back();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - done.start).count();
    double cpu_ms = thread_cpu_ms() - done.start_cpu_ms;
    profile_.add("opt: " + name.str(), ms - done.children_ms, cpu_ms - done.children_cpu_ms);
    if (!open_.empty()) {
      open_.back().children_ms += ms;
      open_.back().children_cpu_ms += cpu_ms;
    }
  }
  CompileProfile &profile_;
  std::vector<Open> open_;
};

} // namespace

namespace {

/// Runs `build(builder)`'s pipeline over `module`, with the analyses the
/// builder registers and, when a profile is active, every pass timed.
template <typename Build>
void run_pipeline(llvm::Module &module, llvm::TargetMachine &target, const llvm::PipelineTuningOptions &tuning,
                  Build build, const std::function<void(llvm::PassInstrumentationCallbacks &)> &instrument = {}) {
  llvm::PassInstrumentationCallbacks callbacks;
  if (instrument)
    instrument(callbacks);
  std::optional<PassTimer> timer;
  if (CompileProfile *profile = active_compile_profile())
    timer.emplace(*profile, callbacks);

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager call_graph;
  llvm::ModuleAnalysisManager modules;
  // Passing the TargetMachine is what runs the target's own callbacks
  // (registerPassBuilderCallbacks: NVVMReflect on NVPTX, and its pass names)
  // and gives the cost models its TTI.
  llvm::PassBuilder builder(&target, tuning, std::nullopt, &callbacks);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(call_graph);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, call_graph, modules);
  llvm::ModulePassManager pipeline = build(builder);
  pipeline.run(module, modules);
}

} // namespace

namespace {

// How far dead-store elimination looks from each store (LLVM's defaults:
// 150 accesses scanned, 90 steps walked). Our kernels are single unrolled
// functions with thousands of stores (the epilogue's, the staged copies'),
// over which the default limits made DSE take 52 to 126 ms of CPU per
// default kernel. With both at 10 the PTX is byte for byte the same for
// the four default kernels of coalesce-compile-time and fourteen more
// coalesce-aot kernels (FP8, SwiGLU, split-K, swap-AB, tf32, residual, the
// warp MMA for sm_80, producer warps, persistent grids, clusters, ragged
// shapes), and DSE takes 10 to 21 ms (docs/performance.md, "Dead-store
// elimination's reach"). The options are LLVM's, process-wide, so they
// are set once, before the first pipeline runs.
constexpr unsigned kDeadStoreReach = 10;

void limit_dead_store_reach() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &options = llvm::cl::getRegisteredOptions();
    for (const char *name : {"dse-memoryssa-scanlimit", "dse-memoryssa-walklimit"}) {
      auto found = options.find(name);
      if (found == options.end())
        internal_error("this LLVM's dead-store elimination has no ", name, " option");
      static_cast<llvm::cl::opt<unsigned> *>(found->second)->setValue(kDeadStoreReach);
    }
  });
}

} // namespace

namespace {

// Runs of O3's function passes that this pipeline skips, each pass with the
// number of times O3 runs it over each function. The criterion for a skip:
// the PTX of the five kernels of coalesce-compile-time and of 47
// coalesce-aot configurations (every pipeline variant, FP8, SwiGLU,
// split-K, batches, views, swap-AB, direct and staged stores, tf32 and the
// warp MMA) stays byte for byte the same with all of them skipped together
// (docs/performance.md, "O3's cleanup passes that find nothing").
//
// InstCombine's sixth and seventh runs clean up after the loop and SLP
// vectorizers, which this pipeline turns off; skipping any other of its
// runs changed some kernel's PTX. The other passes clean up what our
// lowering does not leave: dead stores and code (DSE, ADCE, BDCE), tail
// calls, memcpys, vectors, floats used as small ints, branches to thread
// through, and so on. The counts are checked after the pipeline, so that
// another LLVM's pipeline cannot shift which runs are skipped unnoticed.
struct SkippedRuns {
  const char *pass;
  int runs;                           ///< O3's runs of the pass over each function
  std::initializer_list<int> skipped; ///< which of them (from 0) are skipped
};
const SkippedRuns kSkippedRuns[] = {
    {"InstCombinePass", 8, {5, 6}},
    {"DSEPass", 1, {0}},
    {"ADCEPass", 1, {0}},
    {"BDCEPass", 1, {0}},
    {"InstSimplifyPass", 1, {0}},
    {"JumpThreadingPass", 2, {0, 1}},
    {"TailCallElimPass", 2, {0, 1}},
    {"Float2IntPass", 1, {0}},
    {"VectorCombinePass", 2, {0, 1}},
    {"MemCpyOptPass", 1, {0}},
    {"AggressiveInstCombinePass", 1, {0}},
    {"CallSiteSplittingPass", 1, {0}},
    {"LoopLoadEliminationPass", 1, {0}},
    {"LibCallsShrinkWrapPass", 1, {0}},
    {"MergedLoadStoreMotionPass", 1, {0}},
    {"LoopSinkPass", 1, {0}},
    {"ControlHeightReductionPass", 1, {0}},
};

class PassRuns {
public:
  void skip_in(llvm::PassInstrumentationCallbacks &callbacks) {
    callbacks.registerShouldRunOptionalPassCallback([this](llvm::StringRef pass, llvm::Any ir) {
      const llvm::Function *const *function = llvm::any_cast<const llvm::Function *>(&ir);
      const SkippedRuns *entry = find(pass);
      if (!function || !entry)
        return true;
      int run = runs_[{entry->pass, (*function)->getName().str()}]++;
      for (int skipped : entry->skipped)
        if (run == skipped)
          return false;
      return true;
    });
  }
  /// After the pipeline: each function left with a body had each listed
  /// pass run as often as the table says.
  void check(const llvm::Module &module) const {
    for (const llvm::Function &function : module) {
      if (function.isDeclaration())
        continue;
      for (const SkippedRuns &entry : kSkippedRuns) {
        auto found = runs_.find({entry.pass, function.getName().str()});
        int runs = found == runs_.end() ? 0 : found->second;
        if (runs != entry.runs)
          internal_error("LLVM's O3 pipeline ran ", entry.pass, " ", runs, " times over '", function.getName().str(),
                         "', not ", entry.runs,
                         ": which of its runs are skipped (OptimizeModule.cpp) must be measured again for this LLVM");
      }
    }
  }

private:
  static const SkippedRuns *find(llvm::StringRef pass) {
    for (const SkippedRuns &entry : kSkippedRuns)
      if (pass == entry.pass)
        return &entry;
    return nullptr;
  }
  std::map<std::pair<std::string, std::string>, int> runs_; ///< (pass, function) -> runs so far
};

} // namespace

void optimize_module(llvm::Module &module, llvm::TargetMachine &target) {
  limit_dead_store_reach();
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  PassRuns runs;
  run_pipeline(
      module, target, tuning,
      [](llvm::PassBuilder &builder) { return builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3); },
      [&](llvm::PassInstrumentationCallbacks &callbacks) { runs.skip_in(callbacks); });
  runs.check(module);
}

void optimize_for_checking(llvm::Module &module, llvm::TargetMachine &target) {
  // InstCombine without its fixpoint check: one round is what is wanted
  // here, not an error when another would change more.
  run_pass_pipeline(module, target, "function(sroa,early-cse,instcombine<no-verify-fixpoint>,simplifycfg)");
}

void run_pass_pipeline(llvm::Module &module, llvm::TargetMachine &target, const std::string &passes) {
  run_pipeline(module, target, llvm::PipelineTuningOptions(), [&](llvm::PassBuilder &builder) {
    llvm::ModulePassManager pipeline;
    if (llvm::Error error = builder.parsePassPipeline(pipeline, passes))
      internal_error("bad LLVM pass pipeline '", passes, "': ", llvm::toString(std::move(error)));
    return pipeline;
  });
}

} // namespace coalesce
