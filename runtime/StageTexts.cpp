#include "runtime/StageTexts.h"

#include "codegen/CodeGenPTX.h"
#include "codegen/PtxAssembler.h"
#include "codegen/Symbols.h"
#include "dsl/Error.h"
#include "dsl/FuncContents.h"
#include "dsl/IRPrinter.h"
#include "scheduler/Environment.h"

#include <algorithm>
#include <sstream>
#include <string>

namespace coalesce {

namespace {

std::string joined(const std::vector<std::string> &parts) {
  std::string text;
  for (const std::string &part : parts)
    text += (text.empty() ? "" : ", ") + part;
  return text;
}

std::string printed(const std::vector<Expr> &exprs) {
  std::vector<std::string> parts;
  for (const Expr &e : exprs)
    parts.push_back(to_string(e));
  return joined(parts);
}

// Hopper's and Ampere's multiprocessor: 64K registers, 2048 threads, 32
// blocks; shared memory per multiprocessor by target, 1 KiB of it reserved
// per block.
constexpr int kRegistersPerSm = 65536, kThreadsPerSm = 2048, kBlocksPerSm = 32;

int shared_bytes_per_sm(const GpuTarget &target) {
  const std::string &sm = target.sm();
  return sm.compare(0, 5, "sm_90") == 0 ? 228 * 1024 : sm == "sm_80" ? 164 * 1024 : 100 * 1024; // sm_86, sm_89
}

} // namespace

std::string algorithm_text(const Func &output) {
  Environment env = make_environment(output);
  std::ostringstream out;
  for (const auto &[name, input] : env.inputs) {
    out << "Input " << name << ": " << input->type;
    for (const Expr &extent : input->extents)
      out << "[" << extent << "]";
    out << "\n";
  }
  for (const internal::FuncContents &func : env.funcs) {
    std::string lhs = func.name + "(" + joined(func.pure_vars) + ")";
    out << lhs << " = " << func.pure.value << "\n";
    for (const internal::Definition &update : func.updates)
      out << func.name << "(" << printed(update.args) << ") = " << update.value << "\n";
  }
  return out.str();
}

std::vector<std::pair<std::string, std::string>> kernel_facts(const GpuProgram &program, const std::string &ptxas_log,
                                                               const std::string &loop_nest, const GpuTarget &target) {
  std::vector<KernelResources> reported = parse_ptxas_log(ptxas_log);
  std::vector<std::pair<std::string, std::string>> facts;
  for (const GpuKernel &kernel : program.kernels) {
    const std::string symbol = kernel_symbol(kernel.name);
    facts.push_back({"kernel", symbol});
    facts.push_back({"grid", "(" + printed({kernel.grid[0], kernel.grid[1], kernel.grid[2]}) + ") blocks"});
    facts.push_back({"block", std::to_string(kernel.block[0]) + " x " + std::to_string(kernel.block[1]) + " x " +
                                  std::to_string(kernel.block[2]) + " threads" +
                                  (kernel.cluster_blocks() > 1
                                       ? ", clusters of " + std::to_string(kernel.cluster_blocks()) + " blocks"
                                       : "")});
    const int dynamic = dynamic_shared_bytes(kernel);
    auto found = std::find_if(reported.begin(), reported.end(),
                              [&](const KernelResources &r) { return r.name == symbol; });
    if (found == reported.end()) {
      facts.push_back({"resources", "no ptxas report for " + symbol});
      continue;
    }
    const KernelResources &r = *found;
    facts.push_back({"registers", std::to_string(r.registers) + " per thread"});
    facts.push_back({"spills", r.spills() ? std::to_string(r.spill_store_bytes) + " bytes stored, " +
                                                std::to_string(r.spill_load_bytes) + " loaded per thread"
                                          : "none"});
    facts.push_back({"shared memory", std::to_string(r.shared_bytes) + " bytes static, " + std::to_string(dynamic) +
                                          " dynamic per block"});
    // Registers are allocated per warp in units of 256 (8 per thread).
    const int threads = kernel.threads(), warps = (threads + 31) / 32;
    const int per_warp = std::max(1, (r.registers + 7) / 8 * 8) * 32;
    const int by_registers = kRegistersPerSm / (per_warp * warps);
    const int shared = r.shared_bytes + dynamic;
    const int by_shared = shared > 0 ? shared_bytes_per_sm(target) / (shared + 1024) : kBlocksPerSm;
    const int by_threads = kThreadsPerSm / threads;
    const int blocks = std::min({by_registers, by_shared, by_threads, kBlocksPerSm});
    std::string limit = blocks == by_registers ? "registers" : blocks == by_shared ? "shared memory"
                        : blocks == by_threads ? "threads" : "the block limit";
    facts.push_back({"blocks per SM", std::to_string(blocks) + " (set by " + limit + "; " +
                                          std::to_string(by_registers) + " by registers, " +
                                          std::to_string(by_shared) + " by shared memory, " +
                                          std::to_string(by_threads) + " by threads" +
                                          (kernel.min_blocks_per_sm ? "; the schedule asks for " +
                                                                          std::to_string(kernel.min_blocks_per_sm)
                                                                    : "") +
                                          ")"});
  }
  // The roles, as the printed nest marks them.
  auto has = [&](const char *text) { return loop_nest.find(text) != std::string::npos; };
  std::vector<std::string> roles;
  if (has("# producer warps"))
    roles.push_back("producer warps issue the TMA copies, the MMA warps consume them and run the epilogue");
  else if (has("tensor_copy "))
    roles.push_back("one thread issues each step's TMA copies; every warp runs the MMAs and the epilogue");
  else if (has("async_load"))
    roles.push_back("every thread copies its part of each tile (cp.async) and computes");
  else
    roles.push_back("every thread loads and computes");
  if (has("# the tiles of this block of a persistent grid"))
    roles.push_back("a persistent grid: each block walks several output tiles");
  if (has("last_arrival("))
    roles.push_back("split K: the last block of a tile combines the slices and runs the epilogue");
  std::string text;
  for (const std::string &role : roles)
    text += (text.empty() ? "" : "; ") + role;
  facts.push_back({"roles", text});
  return facts;
}

StageTexts gather_stage_texts(const std::string &title, const GpuProgram &program, const std::string &loop_nest,
                              const std::string &algorithm, const std::string &schedule, const GpuTarget &target) {
  StageTexts texts;
  texts.title = title;
  texts.algorithm = algorithm;
  texts.schedule = schedule;
  texts.loop_nest = loop_nest;
  texts.llvm_ir = emit_gpu_llvm_ir(program, target);
  texts.ptx = compile_to_annotated_ptx(program, target);
  if (ptxas_available()) {
    // One ptxas run gives the report and the cubin the SASS comes from.
    PtxasResult assembled = assemble_with_line_info(texts.ptx, target);
    texts.ptxas_report = assembled.log;
    texts.facts = kernel_facts(program, texts.ptxas_report, loop_nest, target);
    texts.sass = disassemble_with_line_info(assembled);
  } else {
    texts.ptxas_report = "no report: ptxas was not found (" + cuda_toolkit_path("bin/ptxas") +
                         ", or on PATH; set COALESCE_CUDA_ROOT to the CUDA toolkit)";
    texts.facts = {{"resources", "unknown: ptxas was not found"}};
    texts.sass.unavailable = "no SASS: ptxas was not found (" + cuda_toolkit_path("bin/ptxas") + ", or on PATH)";
  }
  return texts;
}

} // namespace coalesce
