#include "runtime/aot/AotCompile.h"

#include "codegen/CodeGenPTX.h"
#include "codegen/PtxAssembler.h"
#include "dsl/Error.h"
#include "runtime/Pipeline.h"
#include "runtime/RefuseUnverified.h"
#include "runtime/StageTexts.h"
#include "runtime/aot/LauncherSource.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace coalesce {

namespace {

struct EmitName {
  const char *name;
  EmitKind kind;
};

const EmitName kEmitNames[] = {{"ptx", EmitKind::Ptx},
                               {"header", EmitKind::Header},
                               {"launcher", EmitKind::Launcher},
                               {"loops", EmitKind::Loops},
                               {"llvm", EmitKind::Llvm},
                               {"html", EmitKind::Html}};

} // namespace

std::vector<EmitKind> parse_emit_list(const std::string &comma_separated) {
  std::vector<EmitKind> kinds;
  std::stringstream list(comma_separated);
  std::string item;
  bool any = false;
  while (std::getline(list, item, ',')) {
    any = true;
    const EmitName *match = nullptr;
    for (const EmitName &known : kEmitNames)
      if (item == known.name)
        match = &known;
    if (!match)
      user_error("--emit=", comma_separated, ": unknown output '", item,
                 "'; expected a comma-separated list of ptx, header, launcher, loops, llvm, html");
    if (std::find(kinds.begin(), kinds.end(), match->kind) == kinds.end())
      kinds.push_back(match->kind);
  }
  if (!any)
    user_error("--emit is empty; expected a comma-separated list of ptx, header, launcher, "
               "loops, llvm, html");
  return kinds;
}

const char *emit_kinds_help() {
  return "  ptx       NAME.ptx: the kernels' PTX\n"
         "  header    NAME.h: the launcher's declaration and documentation\n"
         "  launcher  NAME.cpp: the launcher, PTX embedded (needs only the CUDA Driver API)\n"
         "  loops     NAME.loops.txt: the scheduled loop nest, as Coalesce prints it\n"
         "  llvm      NAME.ll: the optimised LLVM IR the PTX is generated from\n"
         "  html      NAME.html: one page with the loop nest, LLVM IR, PTX and ptxas's report,\n"
         "            each loop linked to the code it became\n";
}

std::string emitted_file_name(const std::string &name, EmitKind kind) {
  switch (kind) {
  case EmitKind::Ptx: return name + ".ptx";
  case EmitKind::Header: return name + ".h";
  case EmitKind::Launcher: return name + ".cpp";
  case EmitKind::Loops: return name + ".loops.txt";
  case EmitKind::Llvm: return name + ".ll";
  case EmitKind::Html: return name + ".html";
  }
  internal_error("unknown EmitKind");
}

// The name becomes the launcher function NAME (and NAME_load,
// NAME_error_message) next to the CUDA Driver API and the C and C++
// libraries in the user's program, and the base of the file names. So it is
// an identifier that C++ does not reserve (no keyword, no leading '_', no
// "__"), not main, not in the Driver API's namespace (cu*, CU*) and not the
// launcher's own helpers (coalesce_launcher).
void check_output_name(const std::string &name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  bool identifier = !name.empty() && letter(name[0]) && std::all_of(name.begin(), name.end(), [&](char c) {
                      return letter(c) || (c >= '0' && c <= '9') || c == '_';
                    });
  const char *why = nullptr;
  if (!identifier)
    why = "it must be a C identifier: ASCII letters, digits and '_', starting with a letter";
  else if (name.find("__") != std::string::npos)
    why = "names containing '__' are reserved in C and C++";
  else if (is_cpp_keyword(name))
    why = "it is a C++ keyword";
  else if (name == "main")
    why = "main is the program's entry point";
  else if (name.compare(0, 2, "cu") == 0 || name.compare(0, 2, "CU") == 0)
    why = "names starting with cu or CU belong to the CUDA Driver API";
  else if (name.compare(0, 17, "coalesce_launcher") == 0)
    why = "coalesce_launcher is the namespace of the launcher's helpers";
  if (why)
    user_error("--name=", name, ": the name becomes the launcher function ", name.empty() ? "NAME" : name,
               " and the file names, so it cannot be this: ", why, "; nothing was written");
}

/// `program` with its kernels named after the launcher: the pipeline names
/// them after its output Func (out, out_1, ..., and out_A_padded for a
/// padded copy), and the launcher's name takes the Func's place (NAME,
/// NAME_1, NAME_A_padded).
GpuProgram named_after_launcher(GpuProgram program, const std::string &name) {
  for (GpuKernel &kernel : program.kernels) {
    COALESCE_INTERNAL_ASSERT(kernel.name.compare(0, program.name.size(), program.name) == 0, "kernel '", kernel.name,
                             "' of program '", program.name, "' is not named after it");
    kernel.name = name + kernel.name.substr(program.name.size());
  }
  return program;
}

std::vector<EmittedFile> compile_generator(Generator &generator, const AotRequest &request) {
  check_output_name(request.name);
  generator.set_target(request.target);
  Pipeline pipeline(generator.build());

  LauncherSpec spec;
  bool needs_program = false;
  for (EmitKind kind : request.emit)
    needs_program |= kind == EmitKind::Ptx || kind == EmitKind::Header || kind == EmitKind::Launcher ||
                     kind == EmitKind::Llvm || kind == EmitKind::Html;
  if (needs_program) {
    spec.name = request.name;
    spec.generator = request.generator_name;
    spec.description = request.description;
    spec.command_line = request.command_line;
    spec.target = request.target;
    spec.program = named_after_launcher(pipeline.gpu_program(), request.name);
    refuse_unverified_on_gpu(spec.program, "write PTX or a launcher");
    spec.ptx = compile_to_ptx(spec.program, request.target);
    // A program with warpgroup MMAs is assembled here even without --cubin
    // (where ptxas is found): ptxas reports the kernels it serializes only
    // as information, and the driver's JIT would not say it at all.
    const bool warpgroup = ptx_has_warpgroup_mma(spec.ptx);
    if (request.cubin || (warpgroup && ptxas_available())) {
      PtxasResult assembled = assemble_ptx(spec.ptx, request.target);
      std::vector<std::string> losses = assembled.performance_losses();
      if (warpgroup && !losses.empty())
        user_error("ptxas reports a performance loss in the warpgroup-MMA kernels of '", request.name, "': ",
                   losses.front(), losses.size() > 1 ? str_cat(" (and ", losses.size() - 1, " more)") : "",
                   "; choose another tiling (fewer blocks per SM, fewer stages or producer warps, smaller warpgroup "
                   "tiles); nothing was written");
      if (request.cubin)
        spec.cubin = std::move(assembled.cubin);
    }
    spec.inputs = generator.input_order();
    for (const SizeParam *size : generator.sizes())
      if (generator.uses_param(*size)) // a size the algorithm leaves out is no argument
        spec.sizes.push_back(
            {size->name(), size->help(), size->fixed() ? std::optional<int>(size->value()) : std::nullopt});
  }

  std::vector<EmittedFile> files;
  for (EmitKind kind : request.emit) {
    std::string contents;
    switch (kind) {
    case EmitKind::Ptx: contents = spec.ptx; break;
    case EmitKind::Header: contents = launcher_header(spec); break;
    case EmitKind::Launcher: contents = launcher_source(spec); break;
    case EmitKind::Loops:
      contents = pipeline.loop_nest();
      if (!contents.empty() && contents.back() != '\n')
        contents += '\n';
      break;
    case EmitKind::Llvm: contents = emit_gpu_llvm_ir(spec.program, request.target); break;
    case EmitKind::Html:
      // The kernels as they ship (named after the launcher), and the flags
      // that scheduled them.
      contents = stage_page_html(gather_stage_texts(
          "Coalesce: " + request.name + " (" + request.generator_name + ") for " + request.target.sm(), spec.program,
          pipeline.loop_nest(), algorithm_text(pipeline.output()), request.command_line, request.target));
      break;
    }
    files.push_back({kind, emitted_file_name(request.name, kind), std::move(contents)});
  }
  return files;
}

} // namespace coalesce
