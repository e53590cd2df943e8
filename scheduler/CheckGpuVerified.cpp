#include "scheduler/CheckGpuVerified.h"

#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

namespace coalesce {

namespace {

// Whether COALESCE_UNVERIFIED_GPU names `feature`.
bool allowed(const std::string &feature) {
  const char *list = std::getenv("COALESCE_UNVERIFIED_GPU");
  if (!list)
    return false;
  std::stringstream names(list);
  for (std::string name; std::getline(names, name, ',');)
    if (name == feature)
      return true;
  return false;
}

} // namespace

void check_gpu_verified(const Environment &env) {
  const FuncContents &output = env.output();
  if (!output.output_strides.empty() && !allowed("output-views"))
    user_error("output '", output.name,
               "' is a view with strides (output_strides), which is unverified on a GPU: it has run on the CPU "
               "only, and the library compiles it for a GPU once `coalesce-gpu-check --sections=strided` has "
               "passed it on an H200. Run it on the CPU, write a dense output, or set "
               "COALESCE_UNVERIFIED_GPU=output-views to compile it for a GPU anyway");
  // An input that is a view with a batch (strides over three or more
  // dimensions: a strided batch's products apart, and their rows).
  for (const auto &[name, input] : env.inputs)
    if (input->strides.size() >= 3 && !allowed("batched-views"))
      user_error("input '", name, "' is a view with a batch (strides over ", input->strides.size(),
                 " dimensions), which is unverified on a GPU: it has run on the CPU only, and the library compiles "
                 "it for a GPU once `coalesce-gpu-check --sections=batched` has passed it on an H200. Run it on the "
                 "CPU, pass dense products, or set COALESCE_UNVERIFIED_GPU=batched-views to compile it for a GPU "
                 "anyway");
  // A persistent grid walking a batch's tiles: three block loops (the
  // batch's z around rows and columns).
  const std::vector<Dim> &dims = output.schedule.stages.front().dims;
  const auto block_loops =
      std::count_if(dims.begin(), dims.end(), [](const Dim &d) { return d.kind == ForKind::GpuBlock; });
  if (output.schedule.persistent_blocks > 0 && block_loops == 3 && !allowed("persistent-batch"))
    user_error("output '", output.name,
               "' walks a batch's tiles on a persistent grid (gpu_persistent_blocks with three block loops), "
               "which is unverified on a GPU: it has run on the CPU only, and the library compiles it for a GPU "
               "once `coalesce-gpu-check --sections=batched` has passed it on an H200. Run it on the CPU, use a "
               "block per tile (no gpu_persistent_blocks), or set COALESCE_UNVERIFIED_GPU=persistent-batch to "
               "compile it for a GPU anyway");
}

void check_gpu_verified_nest(const Stmt &serial, const std::string &output) {
  // In program order, outside any guard: producer warps leaving the kernel
  // (thread_exit, register reallocation), then a barrier of the whole
  // block. Where the shape is left to run time, the pipeline that the
  // producers leave sits under the guard that chooses between the TMA and
  // its cp.async fallback (TMA-describable inputs), and every tile's
  // barriers after it were verified so; where the shape is fixed, that
  // guard and the full tiles' one fold away.
  struct Find : IRVisitor {
    bool exited = false, found = false;
    int guards = 0;
    using IRVisitor::visit;
    void visit(const Call *op) override {
      exited |= guards == 0 && op->intrinsic == Intrinsic::ThreadExit;
      IRVisitor::visit(op);
    }
    void visit(const Barrier *op) override { found |= exited && guards == 0 && op->threads == 0; }
    void visit(const IfThenElse *op) override {
      visit_expr(op->condition);
      ++guards;
      visit_stmt(op->then_case);
      if (op->else_case.defined())
        visit_stmt(op->else_case);
      --guards;
    }
  } find;
  find.visit_stmt(serial);
  if (find.found && !allowed("leaving-producers-whole-tiles"))
    user_error("output '", output,
               "': its producer warps reallocate registers and leave the kernel before barriers of the whole block "
               "outside any guard (a staged output tile's, where the shape is fixed and every tile whole), which "
               "then count the MMA warps alone; that is unverified on a GPU: it has run on the CPU only, and the "
               "library compiles it for a GPU once `coalesce-gpu-check --sections=mma` has passed it on an H200. "
               "Store the tiles directly (TileStores::Direct), keep the producers' registers "
               "(ProducerWarps::registers = 0), leave the shape to run time, or set "
               "COALESCE_UNVERIFIED_GPU=leaving-producers-whole-tiles to compile it for a GPU anyway");
}

} // namespace coalesce
