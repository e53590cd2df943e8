#include "codegen/PtxCache.h"

#include "codegen/GpuPassChoices.h"
#include "codegen/PtxAssembler.h"
#include "dsl/CompileProfile.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"

#include <llvm/Config/llvm-config.h>

#include <cstring>
#include <dlfcn.h>
#include <sstream>
#include <sys/stat.h>

#ifndef COALESCE_GIT_COMMIT
#define COALESCE_GIT_COMMIT "unknown"
#endif

namespace coalesce {

namespace {

/// "SIZE-MTIME" of a file, or "absent".
std::string file_identity(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return "absent";
  return std::to_string(info.st_size) + "-" + std::to_string(info.st_mtim.tv_sec) + "." +
         std::to_string(info.st_mtim.tv_nsec);
}

/// What the printed loop nest leaves implicit: the type of every expression
/// in visiting order, a float constant's exact value, a variable's kind and a
/// call's type. Appended to the printed text, it makes the key as exact as
/// the IR itself.
class ImplicitDetails : public IRVisitor {
public:
  std::ostringstream out;

protected:
  using IRVisitor::visit;
#define COALESCE_RECORD(name)                                                                                    \
  void visit(const name *op) override {                                                                          \
    out << op->type << ' ';                                                                                      \
    IRVisitor::visit(op);                                                                                        \
  }
  COALESCE_RECORD(IntImm) COALESCE_RECORD(Cast) COALESCE_RECORD(Add) COALESCE_RECORD(Sub) COALESCE_RECORD(Mul)
  COALESCE_RECORD(Div) COALESCE_RECORD(Mod) COALESCE_RECORD(Min) COALESCE_RECORD(Max) COALESCE_RECORD(EQ)
  COALESCE_RECORD(NE) COALESCE_RECORD(LT) COALESCE_RECORD(LE) COALESCE_RECORD(GT) COALESCE_RECORD(GE)
  COALESCE_RECORD(And) COALESCE_RECORD(Or) COALESCE_RECORD(Not) COALESCE_RECORD(Select) COALESCE_RECORD(Load)
  COALESCE_RECORD(Let)
#undef COALESCE_RECORD
  void visit(const FloatImm *op) override {
    uint64_t bits;
    std::memcpy(&bits, &op->value, sizeof bits);
    out << op->type << ':' << std::hex << bits << std::dec << ' ';
  }
  void visit(const Variable *op) override {
    out << op->type << ':' << static_cast<int>(op->variable_kind) << ' ';
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    out << op->type << ':' << static_cast<int>(op->call_type) << ' ';
    IRVisitor::visit(op);
  }
};

} // namespace

const std::string &compiler_version() {
  static const std::string version = [] {
    std::string library = "unknown";
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void *>(&ptx_cache_key), &info) && info.dli_fname)
      library = file_identity(info.dli_fname);
    return std::string("coalesce ") + COALESCE_GIT_COMMIT + " (" + library + ")";
  }();
  return version;
}

std::string ptx_cache_key(const GpuNest &nest, const GpuTarget &target) {
  std::ostringstream key;
  key << "ptx\n" << compiler_version() << "\nLLVM " << LLVM_VERSION_STRING << "\n";
  key << "target " << target.sm() << " ptx " << target.ptx_version() << "\n";
  key << gpu_pass_choices() << "\n";
  std::string libdevice = cuda_toolkit_path("nvvm/libdevice/libdevice.10.bc");
  key << "libdevice " << libdevice << " " << file_identity(libdevice) << "\n";
  key << "program " << nest.name << " min_blocks_per_sm " << nest.min_blocks_per_sm << "\n";
  // Not in the PTX, but the verifiers a hit skips read it (a multicast copy
  // must match the clusters).
  key << "cluster " << nest.cluster_loop << " " << nest.cluster_blocks << "\n";
  for (const Argument &arg : nest.args) {
    key << "arg " << arg.name << (arg.is_buffer() ? " buffer " : " scalar ") << arg.type
        << (arg.is_output ? " output" : "");
    for (const Expr &extent : arg.extents)
      key << " [" << extent << "]";
    // A view's strides set its addresses, which the nest (before
    // flattening) does not show.
    for (const Expr &stride : arg.strides)
      key << " stride " << stride;
    key << "\n";
  }
  key << nest.serial;
  ImplicitDetails details;
  details.visit_stmt(nest.serial);
  for (const Argument &arg : nest.args) {
    for (const Expr &extent : arg.extents)
      details.visit_expr(extent);
    for (const Expr &stride : arg.strides)
      details.visit_expr(stride);
  }
  key << "\ntypes " << details.out.str() << "\n";
  return key.str();
}

std::string cached_ptx(const GpuNest &nest, const GpuTarget &target, const CompileCache &cache,
                       const std::function<std::string()> &compile, bool *hit, const std::string &variant) {
  if (hit)
    *hit = false;
  if (!cache.enabled())
    return compile();
  std::string key;
  {
    PhaseTimer timer("cache: key");
    key = ptx_cache_key(nest, target);
    if (!variant.empty())
      key += "\nvariant: " + variant;
  }
  std::optional<std::string> stored;
  {
    PhaseTimer timer("cache: look up");
    stored = cache.load(key, "ptx");
  }
  if (stored) {
    if (hit)
      *hit = true;
    return std::move(*stored);
  }
  std::string ptx = compile();
  PhaseTimer timer("cache: store");
  cache.store(key, "ptx", ptx);
  return ptx;
}

} // namespace coalesce
