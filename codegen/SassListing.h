#pragma once
// The SASS a PTX module becomes, each instruction tied to the PTX line it
// came from, for the stage page (runtime/StagePage.h).
//
// How the tie is made. The PTX is given a line directive before each of its
// instructions, naming the PTX itself as the source (`.file 1 "kernel.ptx"`,
// `.loc 1 N 0` for the instruction on line N); ptxas -lineinfo keeps those
// lines in the cubin, and nvdisasm --print-line-info prints them above the
// SASS they became (`//## File "kernel.ptx", line N`). The directives change
// no instruction.

#include "codegen/GpuTarget.h"
#include "codegen/PtxAssembler.h"

#include <string>
#include <vector>

namespace coalesce {

/// `ptx` with `.file 1 "kernel.ptx"` after its header and `.loc 1 N 0`
/// before each instruction of a function body (N: the instruction's line in
/// `ptx`, from 1). Instructions inside a nested `{ }` scope (inline
/// assembly) take the line of the scope's opening brace.
std::string ptx_with_own_line_numbers(const std::string &ptx);

struct SassListing {
  std::vector<std::string> lines; ///< the disassembly, line info removed
  /// For each line, the PTX line (from 1) it came from; 0 for lines that
  /// are no instruction (labels, headers) or have no line info.
  std::vector<int> ptx_line;
  /// Why there is no listing ("" when there is one): nvdisasm or ptxas
  /// missing, or what they said.
  std::string unavailable;
};

/// Parses `nvdisasm --print-line-info` output: the `//## File "...", line N`
/// comments are dropped, and each instruction after one (`/*0040*/ ...`)
/// records N. Only lines of `file` count (an inlined location names it too).
SassListing parse_nvdisasm_line_info(const std::string &text, const std::string &file = "kernel.ptx");

/// `ptx` assembled for `target` with its own line numbers
/// (ptx_with_own_line_numbers, ptxas -lineinfo): the cubin
/// disassemble_with_line_info reads, and ptxas's report, which the
/// directives leave as it is (they change no instruction). Throws what
/// assemble_ptx throws.
PtxasResult assemble_with_line_info(const std::string &ptx, const GpuTarget &target);

/// The SASS of a cubin from assemble_with_line_info (nvdisasm
/// --print-line-info). Never throws for a missing tool: `unavailable` says
/// which one and where it was looked for.
SassListing disassemble_with_line_info(const PtxasResult &assembled);

} // namespace coalesce
