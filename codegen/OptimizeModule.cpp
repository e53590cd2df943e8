#include "codegen/OptimizeModule.h"

#include "dsl/Error.h"

#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

namespace coalesce {

void verify_module(const llvm::Module &module, const char *what) {
  std::string message;
  llvm::raw_string_ostream out(message);
  if (llvm::verifyModule(module, &out))
    internal_error("LLVM rejected the ", what, " module '", module.getName().str(), "': ",
                   out.str());
}

void optimize_module(llvm::Module &module, llvm::TargetMachine &target, bool vectorize) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = vectorize;
  tuning.SLPVectorization = vectorize;

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager call_graph;
  llvm::ModuleAnalysisManager modules;
  // Passing the TargetMachine is what runs the target's own callbacks
  // (registerPassBuilderCallbacks) and gives the cost models its TTI.
  llvm::PassBuilder builder(&target, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(call_graph);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, call_graph, modules);
  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);
}

} // namespace coalesce
