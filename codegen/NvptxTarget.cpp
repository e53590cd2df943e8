#include "codegen/NvptxTarget.h"

#include "codegen/PtxAssembler.h"
#include "dsl/Error.h"
#include "dsl/IRVisitor.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>

namespace coalesce {

// Whether shared-memory pointers are 32-bit. Every shared-space
// instruction, mbarrier and warpgroup MMA descriptor takes a 32-bit
// address, but the NVPTX backend makes addrspace(3) pointers 64-bit unless
// its nvptx-short-ptr option is set: then the warpgroup pipeline computes
// every tile index, slot and descriptor in 64-bit arithmetic (two
// instructions per add, a 64-bit multiply-high per division by a stage
// count) and converts back; 32-bit made the bf16 kernel at 4096^3 10%
// faster on the H200. Only there: the FFMA and warp-MMA kernels keep
// 64-bit pointers, which ptxas allocates better for them (the 64x64 FFMA
// kernel at 1024^3 on the H200: 168 registers and 0.089 ms with 64-bit,
// 128 registers and 0.103 ms with 32-bit; on sm_80 the 128x128 FFMA default
// spills 8 bytes at its 128-register cap with 32-bit). The width is the
// module's, so one program has one: 32-bit if any of its kernels has a
// warpgroup MMA or a TMA copy.
bool short_shared_pointers(const GpuProgram &program, const GpuTarget &target) {
  if (!target.is_hopper())
    return false;
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const WarpMma *op) override {
      found |= is_warpgroup_mma(op->kind);
      IRVisitor::visit(op);
    }
    void visit(const TensorCopy *) override { found = true; }
  };
  Finder finder;
  for (const GpuKernel &kernel : program.kernels)
    finder.visit_stmt(kernel.body);
  return finder.found;
}

namespace {

// A target machine whose data layout has shared pointers of the width
// asked for. The option is global and read when a target machine is
// constructed, so constructions are serialized.
std::unique_ptr<llvm::TargetMachine> create_machine(const llvm::Target &nvptx, const llvm::Triple &triple,
                                                    const GpuTarget &target, bool short_pointers) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto &options = llvm::cl::getRegisteredOptions();
  auto found = options.find("nvptx-short-ptr");
  if (found == options.end())
    internal_error("this LLVM's NVPTX backend has no nvptx-short-ptr option");
  static_cast<llvm::cl::opt<bool> *>(found->second)->setValue(short_pointers);
  std::unique_ptr<llvm::TargetMachine> machine(nvptx.createTargetMachine(
      triple, target.sm(), target.ptx_feature(), llvm::TargetOptions(), std::nullopt, std::nullopt,
      // Default, not Aggressive: the same PTX for the fp32 FFMA and bf16
      // warpgroup defaults, 6 to 10 lines of 10-11 thousand different for
      // the bf16 warp-MMA and tf32 warpgroup ones, their speed unchanged on
      // the H200, and about a fifth less time in NVPTX's code generation
      // (docs/performance.md, "NVPTX's default optimization level"). The
      // IR pipeline stays O3: O2 left kernels of two blocks per SM spilling.
      llvm::CodeGenOptLevel::Default));
  if (machine && machine->createDataLayout().getPointerSizeInBits(kSharedAddressSpace) != (short_pointers ? 32u : 64u))
    internal_error("the NVPTX target machine for ", target.sm(), " ignored nvptx-short-ptr");
  return machine;
}

void initialize_nvptx_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

} // namespace

std::unique_ptr<llvm::TargetMachine> nvptx_machine(const GpuTarget &target, bool short_pointers) {
  initialize_nvptx_target();
  llvm::Triple triple(kNvptxTriple);
  std::string error;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!nvptx)
    internal_error("this LLVM has no NVPTX backend: ", error);
  std::unique_ptr<llvm::TargetMachine> machine = create_machine(*nvptx, triple, target, short_pointers);
  if (!machine)
    internal_error("cannot create the NVPTX target machine for ", target.sm());
  return machine;
}

void link_libdevice(llvm::Module &module) {
  bool uses_libdevice = false;
  for (const llvm::Function &function : module)
    uses_libdevice |= function.isDeclaration() && function.getName().starts_with("__nv_");
  if (!uses_libdevice)
    return;

  std::string path = cuda_toolkit_path("nvvm/libdevice/libdevice.10.bc");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    user_error("cannot read libdevice (needed for erf/exp/tanh on the GPU) at ", path, ": ",
               file.getError().message(), "; set COALESCE_CUDA_ROOT to the CUDA toolkit");
  llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
      llvm::getOwningLazyBitcodeModule(std::move(*file), module.getContext());
  if (!libdevice)
    user_error("cannot parse libdevice at ", path, ": ", llvm::toString(libdevice.takeError()));
  // libdevice says "nvptx64-nvidia-gpulibs" and an old data layout; adopt
  // ours so the linker does not warn about the mismatch.
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*libdevice), llvm::Linker::LinkOnlyNeeded))
    internal_error("linking libdevice into '", module.getName().str(), "' failed");

  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration())
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
}


} // namespace coalesce
