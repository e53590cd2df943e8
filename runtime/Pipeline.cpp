#include "runtime/Pipeline.h"

#include "codegen/CodeGenHost.h"
#include "codegen/CodeGenPTX.h"
#include "codegen/PtxAssembler.h"
#include "codegen/PtxCache.h"
#include "dsl/CompileProfile.h"
#include "dsl/Error.h"
#include "dsl/IRPrinter.h"
#include "runtime/CudaDriver.h"
#include "runtime/GpuExecutable.h"
#include "runtime/StagePage.h"
#include "runtime/StageTexts.h"
#include "scheduler/Lower.h"
#include "scheduler/SpecializeSizes.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <optional>

namespace coalesce {

Pipeline::Pipeline(Func output, ResourceBudget budget) : output_(std::move(output)), budget_(budget) {}
// Here, where GpuExecutable is complete.
Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline &&) noexcept = default;
Pipeline &Pipeline::operator=(Pipeline &&) noexcept = default;

std::string Pipeline::loop_nest() const { return to_string(lower_loop_nest(output_, budget_)); }

const LoweredFunc &Pipeline::host_lowered() {
  if (!host_lowered_)
    host_lowered_ = std::make_unique<LoweredFunc>(lower_for_host(output_, budget_));
  return *host_lowered_;
}

std::string Pipeline::host_llvm_ir(bool optimize) { return emit_host_llvm_ir(host_lowered(), optimize); }

const GpuNest &Pipeline::gpu_nest() {
  if (!gpu_nest_)
    gpu_nest_ = std::make_unique<GpuNest>(lower_gpu_nest_unverified(output_, budget_));
  return *gpu_nest_;
}

const GpuProgram &Pipeline::gpu_program() {
  if (!gpu_program_)
    gpu_program_ = std::make_unique<GpuProgram>(finish_gpu_program(gpu_nest()));
  return *gpu_program_;
}

std::string Pipeline::gpu_llvm_ir(const GpuTarget &target, bool optimize) {
  return emit_gpu_llvm_ir(gpu_program(), target, optimize);
}

const std::string &Pipeline::ptx(const GpuTarget &target) {
  auto it = ptx_.find(target.sm());
  if (it != ptx_.end())
    return it->second;
  // COALESCE_TIME_COMPILE=1: the breakdown of this compilation on stderr,
  // unless a caller (the compile-time benchmark) is already collecting it.
  CompileProfile own;
  std::optional<ScopedCompileProfile> scope;
  if (!active_compile_profile() && compile_timing_requested())
    scope.emplace(&own);
  auto start = std::chrono::steady_clock::now();
  // The cache is keyed on the nest before thread fusion and its verifiers,
  // so a hit skips them and the finishing passes as well as LLVM (the
  // stored kernel's nest passed the verifiers; a miss runs them first, in
  // finish_gpu_program).
  std::string code = cached_ptx(gpu_nest(), target, CompileCache::from_environment(),
                                [&] { return compile_to_ptx(gpu_program(), target); }, &last_ptx_cached_);
  last_ptx_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (scope)
    std::fprintf(stderr, "schedule to PTX for %s, %s%s:\n%s", output_.name().c_str(), target.sm().c_str(),
                 last_ptx_cached_ ? " (from the compile cache)" : "", own.str().c_str());
  return ptx_[target.sm()] = std::move(code);
}

PtxasResult Pipeline::assemble(const GpuTarget &target) { return assemble_ptx(ptx(target), target); }

void Pipeline::realize_on_cpu(const Arguments &args, Buffer &output) {
  // COALESCE_TIME_COMPILE=1: the breakdown of the first run's host compile
  // (lowering included) on stderr, as Pipeline::ptx prints the GPU's.
  CompileProfile own;
  std::optional<ScopedCompileProfile> scope;
  if (!host_kernel_ && !active_compile_profile() && compile_timing_requested())
    scope.emplace(&own);
  const LoweredFunc &lowered = host_lowered();
  BoundArguments bound = bind_arguments(lowered.args, args, output);
  if (bound.output_empty)
    return; // an empty result: nothing to compute (and empty buffers have no storage)
  if (!host_kernel_) {
    host_kernel_ = compile_for_host(lowered);
    if (scope)
      std::fprintf(stderr, "schedule to host code for %s:\n%s", output_.name().c_str(), own.str().c_str());
  }
  std::vector<int32_t> scalars(lowered.args.size());
  std::vector<void *> slots;
  for (size_t a = 0; a < lowered.args.size(); ++a) {
    const Argument &arg = lowered.args[a];
    if (arg.is_workspace) {
      // Kept between calls: the code leaves it zeroed; grown with zeros.
      std::vector<uint8_t> &workspace = host_workspace_[arg.name];
      if (workspace.size() < bound.bytes[a])
        workspace.resize(bound.bytes[a], 0);
      slots.push_back(workspace.data());
    } else if (arg.is_output) {
      slots.push_back(output.raw_data());
    } else if (arg.is_buffer()) {
      slots.push_back(const_cast<void *>(bound.inputs[a]->raw_data()));
    } else {
      scalars[a] = static_cast<int32_t>(bound.params.at(arg.name));
      slots.push_back(&scalars[a]);
    }
  }
  host_kernel_->run(slots.data());
}

namespace {

// The PTX of `variant`, the program lowered from `nest` specialized for
// `multiples`, from the compile cache where it holds it.
std::string specialized_code(const GpuNest &nest, const GpuProgram &variant, const GpuTarget &target,
                             const SizeMultiples &multiples) {
  return cached_ptx(
      nest, target, CompileCache::from_environment(), [&] { return compile_to_ptx(variant, target); }, nullptr,
      "sizes specialized as multiples: " + specialization_name(multiples));
}

using SpecializedPtx = std::map<std::string, std::optional<std::string>>;

// The PTX of `program` (lowered from `nest`) specialized for `multiples`,
// kept in `memo` for the Pipeline and its executables alike; nothing where
// those sizes decide nothing (the general program is then the variant).
const std::optional<std::string> &memoized_variant(SpecializedPtx &memo, const GpuNest &nest, const GpuProgram &program,
                                                   const GpuTarget &target, const SizeMultiples &multiples) {
  std::string key = target.sm() + ":" + specialization_name(multiples);
  auto known = memo.find(key);
  if (known != memo.end())
    return known->second;
  std::optional<GpuProgram> variant = specialize_sizes(program, multiples);
  std::optional<std::string> code;
  if (variant)
    code = specialized_code(nest, *variant, target, multiples);
  return memo[key] = std::move(code);
}

// `code` loaded for the current device: ptxas's binary where asked for and
// possible (a toolkit newer than the driver makes binaries the driver
// refuses: then the JIT), else the driver's JIT.
gpu::Module load_module(const std::string &code, const GpuTarget &target, GpuAssembler assembler) {
  if (assembler == GpuAssembler::Ptxas && ptxas_available()) {
    try {
      return gpu::Module::load_cubin(assemble_ptx(code, target).cubin, code);
    } catch (const UserError &) {
    }
  }
  return gpu::Module::load_ptx(code);
}

} // namespace

const std::string &Pipeline::specialized_ptx(const GpuTarget &target, const SizeMultiples &multiples) {
  const std::optional<std::string> &code =
      memoized_variant(*specialized_ptx_, gpu_nest(), gpu_program(), target, multiples);
  return code ? *code : ptx(target);
}

const GpuExecutable &Pipeline::gpu_executable(const GpuTarget &target, GpuAssembler assembler) {
  auto it = executables_.find(target.sm());
  if (it != executables_.end())
    return *it->second;
  gpu::Device::get(); // throws GpuUnavailable before any compiling
  const GpuProgram &program = gpu_program();
  // Nothing is compiled here: the general program at the first launch that
  // needs it, a specialized one at the first launch of its sizes. The
  // closures hold copies, so that they outlive a moved Pipeline.
  GpuExecutable::Loader load;
  if (auto known = ptx_.find(target.sm()); known != ptx_.end())
    load = [code = known->second, target, assembler] { return load_module(code, target, assembler); };
  else
    load = [nest = gpu_nest(), program, target, assembler] {
      std::string code =
          cached_ptx(nest, target, CompileCache::from_environment(), [&] { return compile_to_ptx(program, target); });
      return load_module(code, target, assembler);
    };
  GpuExecutable::Specializer specialize = [nest = gpu_nest(), program, target, assembler,
                                           memo = specialized_ptx_](const SizeMultiples &multiples) {
    const std::optional<std::string> &code = memoized_variant(*memo, nest, program, target, multiples);
    if (!code) // the sizes decide nothing: launches run the general program
      return std::unique_ptr<GpuExecutable>();
    // The variant differs from the program only in its kernels' bodies:
    // names, grids, blocks, shared memory and tensor maps are the same.
    return std::make_unique<GpuExecutable>(program, load_module(*code, target, assembler), target);
  };
  return *(executables_[target.sm()] =
               std::make_unique<GpuExecutable>(program, std::move(load), target, std::move(specialize)));
}

void Pipeline::realize_on_gpu(const Arguments &args, Buffer &output) {
  realize_on_gpu(args, output, target_for_current_device());
}

void Pipeline::realize_on_gpu(const Arguments &args, Buffer &output, const GpuTarget &target) {
  const GpuProgram &program = gpu_program();
  BoundArguments bound = bind_arguments(program.args, args, output);
  const GpuExecutable &executable = gpu_executable(target);
  if (bound.output_empty)
    return; // an empty result: no device buffers (cuMemAlloc rejects 0 bytes), no launch
  std::vector<gpu::DeviceBuffer> device;
  std::vector<CUdeviceptr> pointers;
  size_t output_index = 0;
  for (size_t a = 0; a < program.args.size(); ++a) {
    const Argument &arg = program.args[a];
    if (!arg.is_buffer() || arg.is_workspace) {
      device.emplace_back();
      pointers.push_back(0); // a workspace: the executable's own
      continue;
    }
    // By bytes: a bf16/f16 buffer holds 2 per element. An empty input
    // (K = 0) is never read, but the launch takes no null pointer and
    // cuMemAlloc no 0 bytes: it gets a small buffer that stays unread.
    const size_t kEmptyInputBytes = 16;
    if (arg.is_output) {
      device.emplace_back(bound.bytes[a]);
      output_index = a;
      // A view writes its elements only: the ones between them come back
      // as the caller's buffer held them.
      if (!arg.strides.empty())
        device.back().upload(output.raw_data(), bound.bytes[a]);
    } else if (bound.bytes[a] == 0) {
      device.emplace_back(kEmptyInputBytes);
    } else {
      device.emplace_back(bound.bytes[a]);
      device.back().upload(bound.inputs[a]->raw_data(), bound.bytes[a]);
    }
    pointers.push_back(device.back().ptr());
  }
  executable.launch(pointers, bound.params);
  gpu::synchronize();
  device[output_index].download(output.raw_data(), output.size_in_bytes());
}

Device Pipeline::realize(const Arguments &args, Buffer &output, std::string *note) {
  std::string why_not;
  if (gpu::gpu_available(&why_not)) {
    realize_on_gpu(args, output);
    if (note)
      *note = "ran on the GPU (" + gpu::Device::get().name() + ")";
    return Device::Gpu;
  }
  realize_on_cpu(args, output);
  if (note)
    *note = "ran on the CPU: " + why_not;
  return Device::Cpu;
}

GpuTarget target_for_current_device() {
  int cc = gpu::Device::get().compute_capability();
  if (cc >= 90)
    return parse_gpu_target("sm_90a");
  if (cc >= 89)
    return parse_gpu_target("sm_89");
  if (cc >= 86)
    return parse_gpu_target("sm_86");
  if (cc >= 80)
    return parse_gpu_target("sm_80");
  user_error("the GPU has compute capability ", cc / 10, ".", cc % 10, "; Coalesce needs sm_80 or newer");
}

std::string Pipeline::stage_page(const GpuTarget &target) {
  return stage_page_html(gather_stage_texts("Coalesce: " + output_.name() + " for " + target.sm(), gpu_program(),
                                            loop_nest(), algorithm_text(output_), "", target));
}

void Pipeline::write_stage_page(const std::string &path, const GpuTarget &target) {
  std::string page = stage_page(target);
  // A temporary file renamed into place: a reader never sees half a page.
  std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary);
    out << page;
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      user_error("cannot write the stage page to ", path, " (through ", temporary, ")");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    user_error("cannot write the stage page to ", path, ": ", error.message());
  }
}

} // namespace coalesce
