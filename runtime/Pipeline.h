#pragma once
// The user's entry point: an output Func with its schedule, lowered on first
// use, shown at every stage (loop nest, LLVM IR, PTX, ptxas's report) and run
// on the CPU (ORC JIT) or the GPU (PTX through the CUDA Driver API).

#include "codegen/GpuTarget.h"
#include "codegen/PtxAssembler.h"
#include "dsl/Func.h"
#include "runtime/Arguments.h"
#include "runtime/Buffer.h"
#include "scheduler/ResourceBudget.h"
#include "scheduler/SizeMultiples.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coalesce {

// Defined in runtime/GpuExecutable.h, which needs the CUDA toolkit's cuda.h;
// this header, hence runtime/Coalesce.h, does not.
class GpuExecutable;
// The JIT-compiled host function (codegen/CodeGenHost.h), an internal.
class HostKernel;
// The lowered programs (scheduler/LoweredFunc.h), internals: include that
// header to look inside gpu_program().
struct LoweredFunc;
struct GpuNest;
struct GpuProgram;

enum class Device { Cpu, Gpu };

/// Who turns a program's PTX into the GPU's code when it is loaded.
enum class GpuAssembler {
  DriverJit, ///< the driver, when the PTX is loaded (cuModuleLoadDataEx)
  Ptxas,     ///< the toolkit's ptxas, in a process of the calling thread's own
};

class Pipeline {
public:
  /// The schedule is read when the pipeline is first lowered; schedule
  /// the Funcs before asking for anything.
  explicit Pipeline(Func output, ResourceBudget budget = {});
  ~Pipeline();
  Pipeline(Pipeline &&) noexcept;
  Pipeline &operator=(Pipeline &&) noexcept;

  /// The loop nest the schedule produces (serial semantics), printed.
  std::string loop_nest() const;
  /// Unoptimized or optimized LLVM IR for the host, and for the GPU.
  std::string host_llvm_ir(bool optimize = true);
  std::string gpu_llvm_ir(const GpuTarget &target = {}, bool optimize = true);
  const GpuProgram &gpu_program();
  /// PTX for `target`; compiled once per target and kept.
  const std::string &ptx(const GpuTarget &target = {});
  /// The PTX of gpu_program() for launches where each scalar argument of
  /// `multiples` is a multiple of its value there (specialize_sizes): what
  /// a launch at such sizes compiles instead of ptx(target) (gpu_executable).
  const std::string &specialized_ptx(const GpuTarget &target, const SizeMultiples &multiples);
  /// Milliseconds the last fresh schedule-to-PTX compilation took (a
  /// compile cache hit included).
  double last_ptx_compile_ms() const { return last_ptx_ms_; }
  /// Whether that compilation's PTX came from the compile cache
  /// (codegen/CompileCache.h; COALESCE_CACHE=0 turns it off).
  bool last_ptx_from_cache() const { return last_ptx_cached_; }
  /// ptxas's verdict and resource report for the PTX.
  PtxasResult assemble(const GpuTarget &target = {});
  /// One self-contained HTML page with the loop nest, the GPU LLVM IR, the
  /// PTX and ptxas's report side by side, each loop linked to the code it
  /// became (runtime/StagePage.h). Without ptxas the report says so.
  std::string stage_page(const GpuTarget &target = {});
  /// stage_page() written to `path`, whole or not at all.
  void write_stage_page(const std::string &path, const GpuTarget &target = {});

  /// Runs on the CPU; `output` must have the output's shape.
  void realize_on_cpu(const Arguments &args, Buffer &output);
  /// Runs on the GPU (copies in, launches, copies out). Throws
  /// gpu::GpuUnavailable without a GPU.
  void realize_on_gpu(const Arguments &args, Buffer &output, const GpuTarget &target);
  void realize_on_gpu(const Arguments &args, Buffer &output);
  /// Runs on the GPU if there is one, else on the CPU; says which and why
  /// in `note` if given.
  Device realize(const Arguments &args, Buffer &output, std::string *note = nullptr);

  /// The loaded program, for callers that manage device buffers themselves
  /// (include runtime/GpuExecutable.h to use it). GpuAssembler::Ptxas
  /// assembles it with the CUDA toolkit's ptxas where there is one (else,
  /// or where the driver refuses ptxas's binary, the driver's JIT): what
  /// threads loading many programs at once want, since the driver's JIT
  /// compiles one module at a time.
  const GpuExecutable &gpu_executable(const GpuTarget &target, GpuAssembler assembler = GpuAssembler::DriverJit);

  const Func &output() const { return output_; }

private:
  Func output_;
  ResourceBudget budget_;
  std::unique_ptr<LoweredFunc> host_lowered_;
  std::unique_ptr<HostKernel> host_kernel_;
  /// The CPU run's workspaces (split_k), by argument name.
  std::map<std::string, std::vector<uint8_t>> host_workspace_;
  std::unique_ptr<GpuNest> gpu_nest_;
  std::unique_ptr<GpuProgram> gpu_program_;
  std::map<std::string, std::string> ptx_;
  /// Specialized PTX by "sm:multiples" (nothing: the sizes decide
  /// nothing), shared with the executables' specializers (which outlive a
  /// moved Pipeline), so that a variant compiled here is not compiled again
  /// at launch.
  std::shared_ptr<std::map<std::string, std::optional<std::string>>> specialized_ptx_ =
      std::make_shared<std::map<std::string, std::optional<std::string>>>();
  std::map<std::string, std::unique_ptr<GpuExecutable>> executables_;
  double last_ptx_ms_ = 0;
  bool last_ptx_cached_ = false;
  const LoweredFunc &host_lowered();
  const GpuNest &gpu_nest();
};

/// The target matching the current device (sm_90a on Hopper).
GpuTarget target_for_current_device();

} // namespace coalesce
