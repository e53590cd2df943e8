#include "codegen/CodeGenHost.h"
#include "dsl/IRVisitor.h"

#include "codegen/CodeGenLLVM.h"
#include "codegen/HostFloatConversions.h"
#include "codegen/OptimizeModule.h"
#include "dsl/CompileProfile.h"
#include "codegen/Symbols.h"
#include "dsl/Error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <mutex>

namespace coalesce {

namespace {

/// The host flavour of the emitter: math from the C library or LLVM
/// intrinsics, barriers and thread loops as plain sequential code.
class CodeGenHost : public CodeGenLLVM {
public:
  using CodeGenLLVM::CodeGenLLVM;

  /// Emits the body as an internal function taking the arguments by value
  /// (so buffers can be noalias), and the entry point `void NAME(void **)`
  /// that unpacks them and calls it. The inliner merges the two, turning the
  /// noalias parameters into alias scopes.
  void emit(const LoweredFunc &func) {
    llvm::Function *body =
        emit_function(host_symbol(func.name) + ".body", func.args, func.body, llvm::GlobalValue::InternalLinkage);
    body->addFnAttr(llvm::Attribute::AlwaysInline);

    llvm::Type *pointer = llvm::PointerType::getUnqual(context_);
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context_), {pointer}, false);
    llvm::Function *entry =
        llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, host_symbol(func.name), module_);
    entry->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::Argument *arg_array = entry->getArg(0);
    arg_array->setName("args");
    builder_->SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", entry));
    std::vector<llvm::Value *> values;
    for (size_t i = 0; i < func.args.size(); ++i) {
      const Argument &arg = func.args[i];
      llvm::Value *slot = builder_->CreateConstInBoundsGEP1_64(pointer, arg_array, i);
      llvm::Value *address = builder_->CreateLoad(pointer, slot, arg.name + ".address");
      values.push_back(arg.is_buffer()
                           ? address
                           : builder_->CreateLoad(llvm_type_of(arg.type), address, arg.name));
    }
    builder_->CreateCall(body, values);
    builder_->CreateRetVoid();
  }

protected:
  // bf16/f16 as i16 bits with inline conversions: see HostFloatConversions.h.
  bool narrow_floats_as_bits() const override { return true; }
  llvm::Value *emit_widen(Type from, llvm::Value *value) override {
    return emit_host_widen(*builder_, from, value);
  }
  llvm::Value *emit_narrow(Type to, llvm::Value *value) override {
    return emit_host_narrow(*builder_, to, value);
  }

  llvm::FunctionCallee math_function(Intrinsic math, Type type) override {
    if (type != Float(32))
      internal_error("host math function '", intrinsic_name(math), "' of ", type, ": only f32 is supported");
    llvm::Type *f32 = llvm::Type::getFloatTy(context_);
    const char *libm = nullptr;
    switch (math) {
    case Intrinsic::Sqrt:
      return llvm::Intrinsic::getOrInsertDeclaration(&module_, llvm::Intrinsic::sqrt, {f32});
    case Intrinsic::Abs:
      return llvm::Intrinsic::getOrInsertDeclaration(&module_, llvm::Intrinsic::fabs, {f32});
    case Intrinsic::Erf: libm = "erff"; break;
    case Intrinsic::Erfc: libm = "erfcf"; break;
    case Intrinsic::Exp: libm = "expf"; break;
    case Intrinsic::Tanh: libm = "tanhf"; break;
    default: break; // not math: reported below
    }
    if (!libm)
      internal_error("no host math function for '", intrinsic_name(math), "'");
    llvm::FunctionCallee callee = module_.getOrInsertFunction(libm, f32, f32);
    // Pure functions of their argument (we never read errno), so LLVM may
    // hoist them out of loops and drop unused ones.
    auto *function = llvm::cast<llvm::Function>(callee.getCallee());
    function->setDoesNotThrow();
    function->setDoesNotAccessMemory();
    function->setWillReturn();
    return callee;
  }
};

void initialize_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

/// The host CPU, with all of its features (AVX2, FMA, ...).
llvm::orc::JITTargetMachineBuilder host_machine_builder() {
  initialize_native_target();
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    internal_error("cannot describe the host CPU to LLVM: ", llvm::toString(builder.takeError()));
  // The fast instruction selector, no machine-level optimization: see
  // optimize_for_checking (codegen/OptimizeModule.h) for the measurements.
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
  return std::move(*builder);
}

/// Emits, verifies and (when asked) optimizes `func` into a new module.
std::unique_ptr<llvm::Module> build_module(const LoweredFunc &func, llvm::LLVMContext &context,
                                           bool optimize) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      host_machine_builder().createTargetMachine();
  if (!machine)
    internal_error("cannot create the host target machine: ", llvm::toString(machine.takeError()));
  auto module = std::make_unique<llvm::Module>(func.name, context);
  module->setTargetTriple((*machine)->getTargetTriple());
  module->setDataLayout((*machine)->createDataLayout());
  {
    PhaseTimer timer("host: emit LLVM IR");
    CodeGenHost codegen(*module);
    codegen.emit(func);
  }
  {
    PhaseTimer timer("host: verify");
    verify_module(*module, "host");
  }
  if (optimize)
    optimize_for_checking(*module, **machine);
  return module;
}

} // namespace

struct HostKernel::Jit {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

HostKernel::HostKernel(std::string name, std::unique_ptr<Jit> jit, void (*entry)(void **))
    : name_(std::move(name)), jit_(std::move(jit)), entry_(entry) {}

HostKernel::~HostKernel() = default;

void HostKernel::run(void **args) const { entry_(args); }

std::unique_ptr<HostKernel> compile_for_host(const LoweredFunc &func) {
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = build_module(func, *context, /*optimize=*/true);

  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(host_machine_builder()).create();
  if (!jit)
    internal_error("cannot create the host JIT: ", llvm::toString(jit.takeError()));
  llvm::orc::LLJIT &engine = **jit;
  // erff, expf, tanhf, malloc and free come from the C library already
  // loaded in this process.
  llvm::Expected<std::unique_ptr<llvm::orc::DynamicLibrarySearchGenerator>> process_symbols =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          engine.getDataLayout().getGlobalPrefix());
  if (!process_symbols)
    internal_error("cannot search this process for symbols: ",
                   llvm::toString(process_symbols.takeError()));
  engine.getMainJITDylib().addGenerator(std::move(*process_symbols));

  if (llvm::Error error = engine.addIRModule(
          llvm::orc::ThreadSafeModule(std::move(module), std::move(context))))
    internal_error("the host JIT rejected '", func.name, "': ", llvm::toString(std::move(error)));
  // The lookup is what runs the code generator on the module.
  llvm::Expected<llvm::orc::ExecutorAddr> address = [&] {
    PhaseTimer timer("host: machine code");
    return engine.lookup(host_symbol(func.name));
  }();
  if (!address)
    internal_error("the host JIT cannot find '", func.name, "': ",
                   llvm::toString(address.takeError()));
  auto *entry = address->toPtr<void (*)(void **)>();
  return std::unique_ptr<HostKernel>(
      new HostKernel(func.name, std::make_unique<HostKernel::Jit>(HostKernel::Jit{std::move(*jit)}), entry));
}

std::string emit_host_llvm_ir(const LoweredFunc &func, bool optimize) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = build_module(func, context, optimize);
  std::string text;
  llvm::raw_string_ostream out(text);
  module->print(out, nullptr);
  return out.str();
}

} // namespace coalesce
