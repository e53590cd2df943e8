#pragma once
// One self-contained HTML page showing every stage of a pipeline side by
// side: the algorithm (and the schedule's flags, from coalesce-aot), the
// kernels' resources, the loop nest, the LLVM IR, the PTX, the SASS and
// ptxas's report, each loop of the nest linked to the code it became
// (Pipeline::stage_page and coalesce-aot --emit=html write it;
// runtime/StageTexts.h gathers what it shows).
//
// How a loop finds its code. Codegen names each loop's blocks after the loop
// (`ko.loop`, LLVM numbering repeats: `ko.loop14`), and the annotated PTX
// (compile_to_annotated_ptx) writes each block's IR name after its label
// (`$L__BB0_4:  // %ko.loop`). So:
//   - a serial loop links to the IR blocks of its loop and to the PTX labels
//     carrying their names; the k-th `ko` of the nest to the k-th `ko.loop*`
//     of the IR when both have as many, else to all of them;
//   - a gpu_block / gpu_thread loop is no loop on the GPU: it links to where
//     the IR and the PTX read its index (`ctaid.x`, `tid.y`, ...);
//   - an unrolled loop has no code of its own (its copies are inline in the
//     enclosing loop's blocks) and says so;
//   - the SASS of a loop is what its PTX became: each SASS instruction
//     carries the PTX line it came from (codegen/SassListing.h), and a loop
//     linked to a PTX label owns the PTX from that label to the next.
// Everything is in the file (no network, no external script or style).

#include "codegen/SassListing.h"

#include <string>
#include <utility>
#include <vector>

namespace coalesce {

struct StageTexts {
  std::string title;
  std::string algorithm;    ///< the inputs and the Funcs' definitions
  std::string schedule;     ///< how it was scheduled (coalesce-aot's flags), or ""
  std::vector<std::pair<std::string, std::string>> facts; ///< kernel, registers, shared memory, ...
  std::string loop_nest;    ///< Pipeline::loop_nest()
  std::string llvm_ir;      ///< the optimized GPU IR
  std::string ptx;          ///< compile_to_annotated_ptx()
  std::string ptxas_report; ///< ptxas -v's log, or why there is none
  SassListing sass;         ///< tied to the lines of `ptx`; or why there is none
};

/// The page. Pure text processing: no compiler, no ptxas.
std::string stage_page_html(const StageTexts &texts);

} // namespace coalesce
