#include "codegen/CodeGenPTX.h"

#include "codegen/CodeGenLLVM.h"
#include "codegen/OptimizeModule.h"
#include "codegen/PtxAssembler.h"
#include "codegen/Symbols.h"
#include "dsl/Error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cctype>
#include <mutex>

namespace coalesce {

namespace {

constexpr const char *kTriple = "nvptx64-nvidia-cuda";
constexpr unsigned kSharedAddressSpace = 3;

/// The GPU flavour of the emitter: one kernel per GpuKernel.
class CodeGenPTX : public CodeGenLLVM {
public:
  using CodeGenLLVM::CodeGenLLVM;

  void emit(const GpuProgram &program) {
    for (const GpuKernel &kernel : program.kernels) {
      check_kernel_name(kernel_symbol(kernel.name));
      kernel_ = &kernel;
      llvm::Function *function = emit_function(kernel_symbol(kernel.name), program.args, kernel.body,
                                                llvm::GlobalValue::ExternalLinkage);
      // LLVM 22 marks kernels by calling convention (the old nvvm.annotations
      // "kernel" entry is auto-upgraded to it), and takes the launch bound
      // as a function attribute that the backend prints as `.maxntid`.
      function->setCallingConv(llvm::CallingConv::PTX_Kernel);
      // ptxas caps registers so that this many blocks fit on one SM.
      if (kernel.min_blocks_per_sm > 0)
        function->addFnAttr("nvvm.minctasm", std::to_string(kernel.min_blocks_per_sm));
      function->addFnAttr("nvvm.maxntid", str_cat(kernel.block[0], ",", kernel.block[1], ",",
                                                  kernel.block[2]));
    }
    kernel_ = nullptr;
  }

protected:
  llvm::FunctionCallee math_function(const std::string &name, Type type) override {
    if (type != Float(32))
      internal_error("GPU math function '", name, "' of ", type, ": only f32 is supported");
    // libdevice's f32 names; linked in after emission.
    const char *libdevice = name == "erf"    ? "__nv_erff"
                            : name == "exp"  ? "__nv_expf"
                            : name == "tanh" ? "__nv_tanhf"
                            : name == "sqrt" ? "__nv_sqrtf"
                            : name == "abs"  ? "__nv_fabsf"
                                             : nullptr;
    if (!libdevice)
      internal_error("no libdevice function for '", name, "'");
    llvm::Type *f32 = llvm::Type::getFloatTy(context_);
    return module_.getOrInsertFunction(libdevice, f32, f32);
  }

  llvm::Value *emit_target_intrinsic(const Call *op) override {
    static const std::pair<const char *, llvm::Intrinsic::ID> kIndices[] = {
        {"thread_id.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
        {"thread_id.y", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y},
        {"thread_id.z", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z},
        {"block_id.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
        {"block_id.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
        {"block_id.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
    };
    for (const auto &[name, id] : kIndices)
      if (op->name == name)
        return builder_->CreateIntrinsic(id, {}, {}, {}, op->name);
    return CodeGenLLVM::emit_target_intrinsic(op);
  }

  // cp.async (sm_80+): global to shared without passing through registers,
  // so the copy of the next tile overlaps the arithmetic on this one.
  void emit_async_copy(llvm::Value *destination, llvm::Value *source, Type type) override {
    if (type.bytes() != 4)
      return CodeGenLLVM::emit_async_copy(destination, source, type);
    llvm::Value *shared = builder_->CreateAddrSpaceCast(destination, builder_->getPtrTy(kSharedAddressSpace));
    llvm::Value *global = builder_->CreateAddrSpaceCast(source, builder_->getPtrTy(1));
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{shared, global});
  }

  void emit_async_wait() override {
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, llvm::ArrayRef<llvm::Type *>{},
                              llvm::ArrayRef<llvm::Value *>{});
  }

  void emit_barrier() override {
    // bar.sync 0, as __syncthreads(); llvm.nvvm.barrier0 is its old name.
    builder_->CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {},
                              {builder_->getInt32(0)});
  }

  llvm::Value *allocate_buffer(const Allocate *op, int64_t elements) override {
    llvm::Type *element = llvm_type_of(op->type);
    switch (op->memory) {
    case MemoryType::Shared: {
      // Static shared memory: one array per allocation, named after the
      // kernel so two kernels' tiles never share a symbol.
      auto *storage = new llvm::GlobalVariable(
          module_, llvm::ArrayType::get(element, elements), false,
          llvm::GlobalValue::InternalLinkage,
          llvm::UndefValue::get(llvm::ArrayType::get(element, elements)),
          kernel_symbol(kernel_->name) + "_" + op->name, nullptr, llvm::GlobalValue::NotThreadLocal,
          kSharedAddressSpace);
      storage->setAlignment(llvm::Align(16));
      return storage;
    }
    case MemoryType::Register:
    case MemoryType::Auto:
      // Per-thread local array; SROA turns it into registers when every
      // index is a constant, as lowering guarantees for Register.
      return entry_alloca(element, elements, op->name);
    case MemoryType::Heap:
      internal_error("heap allocation '", op->name, "' in GPU kernel '", kernel_->name, "'");
    }
    internal_error("unknown memory type of '", op->name, "'");
  }

  void emit_for(const For *op) override {
    if (op->for_kind == ForKind::GpuBlock || op->for_kind == ForKind::GpuThread)
      internal_error(for_kind_name(op->for_kind), " loop '", op->name, "' in GPU kernel '",
                     kernel_->name, "': GPU mapping replaces them by thread and block indices");
    CodeGenLLVM::emit_for(op);
  }

private:
  // The runtime looks kernels up by name, so the name must survive into the
  // PTX unchanged: a valid PTX identifier that the backend will not rename.
  static void check_kernel_name(const std::string &name) {
    bool valid = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name)
      valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!valid)
      internal_error("GPU kernel name '", name, "' is not a C identifier");
  }

  const GpuKernel *kernel_ = nullptr;
};

void initialize_nvptx_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> nvptx_machine(const GpuTarget &target) {
  initialize_nvptx_target();
  llvm::Triple triple(kTriple);
  std::string error;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!nvptx)
    internal_error("this LLVM has no NVPTX backend: ", error);
  std::unique_ptr<llvm::TargetMachine> machine(nvptx->createTargetMachine(
      triple, target.sm(), target.ptx_feature(), llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    internal_error("cannot create the NVPTX target machine for ", target.sm());
  return machine;
}

/// Links the libdevice functions the module calls (and nothing else), then
/// makes them internal so they are inlined and their bodies dropped.
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

/// Emits, verifies and (when asked) links libdevice into and optimizes the
/// module for `program`.
std::unique_ptr<llvm::Module> build_module(const GpuProgram &program, llvm::TargetMachine &machine,
                                           llvm::LLVMContext &context, bool optimize) {
  auto module = std::make_unique<llvm::Module>(program.name, context);
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  // libdevice asks __nvvm_reflect whether to flush denormals; answer no, so
  // results match the host's IEEE arithmetic.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  CodeGenPTX codegen(*module);
  codegen.emit(program);
  verify_module(*module, "GPU");
  if (!optimize)
    return module;
  link_libdevice(*module);
  verify_module(*module, "GPU (with libdevice)");
  optimize_module(*module, machine, /*vectorize=*/false);
  return module;
}

} // namespace

std::string compile_to_ptx(const GpuProgram &program, const GpuTarget &target) {
  std::unique_ptr<llvm::TargetMachine> machine = nvptx_machine(target);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = build_module(program, *machine, context, true);

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager emit;
  if (machine->addPassesToEmitFile(emit, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    internal_error("the NVPTX backend cannot emit assembly");
  emit.run(*module);
  return ptx.str().str();
}

std::string emit_gpu_llvm_ir(const GpuProgram &program, const GpuTarget &target, bool optimize) {
  std::unique_ptr<llvm::TargetMachine> machine = nvptx_machine(target);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = build_module(program, *machine, context, optimize);
  std::string text;
  llvm::raw_string_ostream out(text);
  module->print(out, nullptr);
  return out.str();
}

} // namespace coalesce
