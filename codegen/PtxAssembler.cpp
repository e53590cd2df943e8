#include "codegen/PtxAssembler.h"

#include "codegen/Symbols.h"
#include "codegen/TempFile.h"
#include "dsl/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#ifndef COALESCE_CUDA_ROOT
#define COALESCE_CUDA_ROOT "/usr/local/cuda"
#endif

namespace coalesce {

std::string cuda_toolkit_path(const std::string &relative) {
  const char *root = std::getenv("COALESCE_CUDA_ROOT");
  return std::string(root && *root ? root : COALESCE_CUDA_ROOT) + "/" + relative;
}

std::string find_cuda_tool(const std::string &name) {
  std::string bundled = cuda_toolkit_path("bin/" + name);
  if (llvm::sys::fs::can_execute(bundled))
    return bundled;
  llvm::ErrorOr<std::string> on_path = llvm::sys::findProgramByName(name);
  return on_path ? *on_path : std::string();
}

namespace {

std::string find_ptxas() { return find_cuda_tool("ptxas"); }

int to_int(const std::ssub_match &match) { return std::stoi(match.str()); }

} // namespace

const KernelResources *PtxasResult::find(const std::string &kernel) const {
  for (const KernelResources &resources : kernels)
    if (resources.name == kernel_symbol(kernel))
      return &resources;
  return nullptr;
}

bool ptx_has_warpgroup_mma(const std::string &ptx) { return ptx.find("wgmma.mma_async") != std::string::npos; }

std::vector<std::string> PtxasResult::performance_losses() const {
  // The injected waits and arrives (C7517, C7519) are worded as plain
  // information, without the "Potential Performance Loss" of the others:
  // their codes name them.
  static const std::regex code(R"(\(C75(0[7-9]|1[0-9]|20)\))");
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("Potential Performance Loss") != std::string::npos || std::regex_search(line, code))
      lines.push_back(line);
  return lines;
}

std::vector<KernelResources> parse_ptxas_log(const std::string &log) {
  // ptxas -v reports each function as:
  //   ptxas info    : Function properties for NAME
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, ...
  static const std::regex properties(R"(Function properties for ([^\s]+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex shared(R"((\d+) bytes smem)");

  std::vector<KernelResources> kernels;
  std::istringstream lines(log);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, properties)) {
      kernels.push_back(KernelResources{match[1].str()});
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &current = kernels.back();
    if (std::regex_search(line, match, frame)) {
      current.stack_frame_bytes = to_int(match[1]);
      current.spill_store_bytes = to_int(match[2]);
      current.spill_load_bytes = to_int(match[3]);
    }
    if (std::regex_search(line, match, used))
      current.registers = to_int(match[1]);
    if (std::regex_search(line, match, barriers))
      current.barriers = to_int(match[1]);
    if (std::regex_search(line, match, shared))
      current.shared_bytes = to_int(match[1]);
  }
  return kernels;
}

bool ptxas_available() { return !find_ptxas().empty(); }

PtxasResult assemble_ptx(const std::string &ptx, const GpuTarget &target, const std::vector<std::string> &extra_flags) {
  std::string ptxas = find_ptxas();
  if (ptxas.empty())
    user_error("ptxas not found: looked for ", cuda_toolkit_path("bin/ptxas"),
               " and on PATH; set COALESCE_CUDA_ROOT to the CUDA toolkit");

  TempFile input("ptx", "ptxas"), output("cubin", "ptxas"), log("log", "ptxas");
  {
    std::error_code error;
    llvm::raw_fd_ostream out(input.path, error);
    if (error)
      user_error("cannot write PTX to ", input.path.str().str(), ": ", error.message());
    out << ptx;
  }

  std::string arch = "-arch=" + target.sm();
  std::vector<llvm::StringRef> args = {ptxas, arch, "-v"};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  args.insert(args.end(), {input.path, "-o", output.path});
  // ptxas writes its report and its errors to stderr; keep both, in order.
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log.path),
                                                llvm::StringRef(log.path)};
  std::string launch_error;
  int status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &launch_error);

  PtxasResult result;
  result.log = read_temp_file(log.path);
  if (status < 0)
    user_error("cannot run ", ptxas, ": ", launch_error);
  if (status != 0)
    user_error("ptxas rejected the PTX for ", target.sm(), " (exit status ", status, "):\n",
               result.log);
  result.cubin = read_temp_file(output.path);
  result.kernels = parse_ptxas_log(result.log);
  return result;
}

} // namespace coalesce
