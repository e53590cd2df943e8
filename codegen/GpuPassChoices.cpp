#include "codegen/GpuPassChoices.h"

#include "dsl/Error.h"

#include <llvm/ADT/StringSet.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/OptBisect.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace coalesce {

namespace {

// Nothing is skipped by default. Skipping straight-line strength reduction
// ("slsr") cut NVPTX code generation by 5 to 20% and the SASS by up to a
// fifth, but the bf16 kernels ran 0.5 to 3% slower on the GPU
// (docs/performance.md, "Straight-line strength reduction").
constexpr const char *kDefaultSkippedNvptxPasses = "";

std::string normalized_list(const std::string &text) {
  std::string list, item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty() || item == "none")
      continue;
    for (char c : item)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
        user_error("COALESCE_NVPTX_SKIP: '", item, "' is not an LLVM pass name (letters, digits, '-', '_')");
    list += (list.empty() ? "" : ",") + item;
  }
  return list;
}

} // namespace

const std::string &skipped_nvptx_passes() {
  static const std::string list = [] {
    const char *set = std::getenv("COALESCE_NVPTX_SKIP");
    return normalized_list(set && *set ? set : kDefaultSkippedNvptxPasses);
  }();
  return list;
}

std::string gpu_pass_choices() {
  std::string choices = "nvptx skips [" + skipped_nvptx_passes() + "]";
  if (const char *passes = std::getenv("COALESCE_GPU_PASSES"); passes && *passes)
    choices += " ir passes [" + std::string(passes) + "]";
  return choices;
}

// The legacy pass manager of code generation asks the context's gate before
// each optional pass, by the pass's argument name.
struct SkippedNvptxPasses::Gate : llvm::OptPassGate {
  llvm::StringSet<> skipped;
  bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override { return !skipped.contains(pass); }
  bool isEnabled() const override { return !skipped.empty(); }
};

SkippedNvptxPasses::SkippedNvptxPasses(llvm::LLVMContext &context)
    : context_(context), previous_(&context.getOptPassGate()), gate_(new Gate) {
  std::istringstream in(skipped_nvptx_passes());
  for (std::string item; std::getline(in, item, ',');)
    gate_->skipped.insert(item);
  context_.setOptPassGate(*gate_);
}

SkippedNvptxPasses::~SkippedNvptxPasses() {
  context_.setOptPassGate(*previous_);
  delete gate_;
}

} // namespace coalesce
