// The main of every ahead-of-time tool: link a file that registers
// generators (COALESCE_REGISTER_GENERATOR) against coalesce_aot_main and the
// result is a complete tool (coalesce-aot is coalesce_aot.cpp plus this).
//
//   TOOL [--generator-library=LIB.so ...] [--generator=NAME] [--GENERATOR_PARAM=VALUE ...]
//        [--target=sm_90a] [--name=NAME] [--output-dir=DIR] [--emit=ptx,header,launcher]
//
// --generator-library loads a shared library of the user's generators
// (coalesce_add_generator() builds one: the user's files, linked against
// libcoalesce only) before anything else, so that the installed tool
// compiles generators it was not built with. The library's
// COALESCE_REGISTER_GENERATOR calls reach this tool's registry: the tool
// exports its symbols (ENABLE_EXPORTS), which the library leaves undefined.
//
// With --output-dir the outputs are written there as files, all or nothing;
// without it they are printed to stdout (--emit=loops to read the schedule).
// Every value is checked before anything is compiled, and everything is
// compiled in memory before anything is written: a bad flag or value exits
// with status 1, a message, and no files.
//
// Command-line parsing is llvm::cl, and all of it lives in this file. The
// tool links LLVM itself for that: with the shared libLLVM (the default
// build) the tool and libcoalesce share one option registry, so the
// generator's flags are checked against every LLVM option already there; with
// COALESCE_STATIC_LLVM libcoalesce keeps its own copy of LLVM hidden inside
// it, and the tool's options live in the tool's own registry, so the two
// never meet. Other code of the project must not declare cl::opts that a
// tool is expected to parse.

#include "runtime/aot/AotCompile.h"
#include "runtime/Version.h"
#include "runtime/aot/Generator.h"
#include "runtime/aot/OutputFiles.h"
#include "dsl/Error.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <dlfcn.h>

#include <deque>
#include <memory>
#include <optional>

namespace cl = llvm::cl;

namespace coalesce {
namespace {

/// The flags every tool has, whatever its generators.
const char *const kToolFlags[] = {"generator", "generator-library", "target", "name", "output-dir", "emit", "cubin",
                                  "help", "help-list", "help-hidden", "help-list-hidden",
                                  "version", "print-options", "print-all-options"};

/// The value of --generator in argv, if any, so that the generator's own
/// flags can be declared before the command line is parsed.
std::optional<std::string> generator_flag(int argc, char **argv) {
  for (int a = 1; a < argc; ++a) {
    llvm::StringRef arg(argv[a]);
    if (!arg.consume_front("--") && !arg.consume_front("-"))
      continue;
    if (arg.consume_front("generator=")) // --generator=NAME
      return arg.str();
    if (arg == "generator" && a + 1 < argc) // --generator NAME
      return std::string(argv[a + 1]);
  }
  return std::nullopt;
}

/// Every --generator-library value in argv, in order.
std::vector<std::string> generator_library_flags(int argc, char **argv) {
  std::vector<std::string> paths;
  for (int a = 1; a < argc; ++a) {
    llvm::StringRef arg(argv[a]);
    if (!arg.consume_front("--") && !arg.consume_front("-"))
      continue;
    if (arg.consume_front("generator-library="))
      paths.push_back(arg.str());
    else if (arg == "generator-library")
      paths.push_back(a + 1 < argc ? std::string(argv[a + 1]) : std::string());
  }
  return paths;
}

/// Loads each library, which registers its generators as it loads; a path
/// that does not load, or a library that registers none, is a UserError.
void load_generator_libraries(const std::vector<std::string> &paths) {
  for (const std::string &path : paths) {
    if (path.empty())
      user_error("--generator-library is empty; give the path of a shared library of generators "
                 "(coalesce_add_generator builds one)");
    const size_t before = registered_generators().size();
    if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char *why = dlerror();
      user_error("--generator-library=", path, ": cannot load it: ", why ? why : "unknown reason");
    }
    if (std::string problems = generator_registry_problems(); !problems.empty())
      user_error("--generator-library=", path, ": ", problems);
    if (registered_generators().size() == before)
      user_error("--generator-library=", path, " registers no generator: its sources must use "
                 "COALESCE_REGISTER_GENERATOR");
  }
}

/// The generator to use: --generator's value, else the only one registered.
std::string choose_generator(int argc, char **argv) {
  if (std::optional<std::string> named = generator_flag(argc, argv))
    return *named;
  const auto &generators = registered_generators();
  return generators.size() == 1 ? generators.begin()->first : std::string();
}

std::string overview(const std::string &tool) {
  std::string text =
      "compiles a generator's Func (algorithm and schedule) ahead of time to PTX plus a C++\n"
      "launcher that needs only the CUDA Driver API.\n\n"
      "Outputs (--emit, comma-separated; default ptx,header,launcher):\n";
  text += emit_kinds_help();
  text += "With --output-dir=DIR they are written to DIR (created if missing), all or nothing;\n"
          "without it they are printed to stdout. Every run compiles afresh: the compile cache\n"
          "(coalesce-cache) holds kernels named after their Funcs, these are named after the\n"
          "launcher, and a build runs each configuration once.\n\nGenerators in this tool:\n";
  for (const auto &[name, entry] : registered_generators())
    text += "  " + name + ": " + entry.description + "\n";
  text += "\nExamples:\n  " + tool + " --name=my_kernel --output-dir=generated\n  " + tool +
          " --emit=loops\n\nExit status: 0 on success, 1 for a bad flag, value or schedule, "
          "2 for an internal error.";
  return text;
}

/// The flags that regenerate the same output, for the generated header.
std::string command_line(const std::string &tool, const std::string &libraries, const std::string &generator_name,
                         const Generator &generator, const std::string &name,
                         const std::string &target, bool cubin) {
  std::string line = tool + libraries + " --generator=" + generator_name + " --name=" + name +
                     " --target=" + target + (cubin ? " --cubin" : "");
  for (const GeneratorParamBase *param : generator.params())
    if (!param->value_text().empty() && generator.uses_param(*param))
      line += " --" + param->name() + "=" + param->value_text();
  return line;
}

/// Everything the command line declares, kept alive while it is parsed and read.
struct Flags {
  explicit Flags(const std::string &generator_name)
      : param_title(generator_name.empty() ? "Generator parameters"
                                           : "Parameters of generator '" + generator_name + "'") {}
  std::string param_title;
  cl::OptionCategory tool_category{"Tool options"};
  cl::OptionCategory param_category{param_title};
  std::deque<std::string> texts; // descriptions the options point into
  std::vector<std::pair<GeneratorParamBase *, std::unique_ptr<cl::opt<std::string>>>> params;
};

/// Declares one flag per parameter of `generator`.
void declare_param_flags(Flags &flags, Generator &generator, const std::string &generator_name) {
  auto &registered = cl::getRegisteredOptions();
  for (GeneratorParamBase *param : generator.params()) {
    const std::string &name = param->name();
    for (const char *tool_flag : kToolFlags)
      if (name == tool_flag)
        user_error("generator '", generator_name, "' declares a parameter '", name,
                   "', which clashes with the tool's own --", name, " flag; rename it");
    if (registered.count(name))
      user_error("generator '", generator_name, "' declares a parameter '", name,
                 "', which clashes with an LLVM option of the same name; rename it");
    const std::string &help = flags.texts.emplace_back(
        param->help() + " (default: " + param->default_text() + ")");
    const std::string &values = flags.texts.emplace_back(param->value_description());
    auto option = std::make_unique<cl::opt<std::string>>(
        llvm::StringRef(name), cl::desc(help), cl::value_desc(values),
        cl::cat(flags.param_category),
        param->value_optional() ? cl::ValueOptional : cl::ValueRequired);
    flags.params.emplace_back(param, std::move(option));
  }
}

int run(int argc, char **argv) {
  std::string tool = llvm::sys::path::filename(argv[0]).str();
  if (std::string problems = generator_registry_problems(); !problems.empty())
    user_error(problems);
  const std::vector<std::string> libraries = generator_library_flags(argc, argv);
  load_generator_libraries(libraries);

  std::string generator_name = choose_generator(argc, argv);
  std::unique_ptr<Generator> generator;
  if (!generator_name.empty())
    generator = create_generator(generator_name);

  Flags flags(generator_name);
  cl::opt<std::string> generator_option(
      "generator", cl::desc("the generator to compile (default: the only one in this tool)"),
      cl::value_desc("name"), cl::init(generator_name), cl::cat(flags.tool_category));
  cl::list<std::string> generator_library_option(
      "generator-library",
      cl::desc("a shared library of generators to load first (coalesce_add_generator builds one); may be "
               "given several times"),
      cl::value_desc("path"), cl::cat(flags.tool_category));
  cl::opt<std::string> target_option(
      "target",
      cl::desc(flags.texts.emplace_back(std::string("the GPU architecture to generate PTX for: ") +
                                        supported_gpu_targets() + " (default: sm_90a, Hopper)")),
      cl::value_desc("sm_XX"), cl::init("sm_90a"), cl::cat(flags.tool_category));
  cl::opt<std::string> name_option(
      "name",
      cl::desc("the launcher function and base name of the files, a C identifier (default: the "
               "generator's name)"),
      cl::value_desc("identifier"), cl::cat(flags.tool_category));
  cl::opt<std::string> output_dir_option(
      "output-dir",
      cl::desc("write the outputs to this directory (created if missing), all or nothing; "
               "without it, print them to stdout"),
      cl::value_desc("dir"), cl::cat(flags.tool_category));
  cl::opt<std::string> emit_option(
      "emit",
      cl::desc("what to produce, comma-separated: ptx (NAME.ptx), header (NAME.h), launcher "
               "(NAME.cpp), loops (the loop nest), llvm (LLVM IR) (default: ptx,header,launcher)"),
      cl::value_desc("kinds"), cl::init("ptx,header,launcher"), cl::cat(flags.tool_category));
  cl::opt<bool> cubin_option(
      "cubin",
      cl::desc("also embed in the launcher the cubin ptxas assembles for the target; the launcher "
               "loads it first and falls back to the PTX if the driver refuses it (needs ptxas)"),
      cl::cat(flags.tool_category));
  if (generator)
    declare_param_flags(flags, *generator, generator_name);

  cl::HideUnrelatedOptions({&flags.tool_category, &flags.param_category});
  print_version_as("coalesce-aot");
  std::string overview_text = overview(tool);
  if (!cl::ParseCommandLineOptions(argc, argv, overview_text, &llvm::errs()))
    return 1; // llvm::cl has printed what was wrong

  if (!generator) {
    std::string names;
    for (const auto &entry : registered_generators())
      names += (names.empty() ? "" : ", ") + entry.first;
    if (names.empty())
      user_error("this tool has no generators: link a file that uses COALESCE_REGISTER_GENERATOR");
    user_error("this tool has several generators (", names,
               "): choose one with --generator=NAME");
  }

  // Check every value before compiling anything. A flag given twice is an
  // error, not "the last one wins" (llvm::cl's default).
  for (cl::Option *option : std::initializer_list<cl::Option *>{&generator_option, &target_option, &name_option,
                                                                 &output_dir_option, &emit_option, &cubin_option})
    if (option->getNumOccurrences() > 1)
      user_error("--", option->ArgStr.str(), " is given ", option->getNumOccurrences(), " times; give it once");
  for (auto &[param, option] : flags.params)
    if (option->getNumOccurrences() > 1)
      user_error("--", param->name(), " is given ", option->getNumOccurrences(), " times; give it once");
  for (auto &[param, option] : flags.params)
    if (option->getNumOccurrences() > 0)
      param->set_from_string(*option);
  GpuTarget target = parse_gpu_target(target_option);
  if (name_option.getNumOccurrences() > 0 && name_option.empty())
    user_error("--name is empty; give a C identifier, or leave it out for the generator's name (", generator_name,
               ")");
  std::string name = name_option.empty() ? generator_name : std::string(name_option);
  check_output_name(name);
  std::vector<EmitKind> emit = parse_emit_list(emit_option);
  std::string output_dir = output_dir_option;
  if (output_dir_option.getNumOccurrences() > 0 && output_dir.empty())
    user_error("--output-dir is empty; give a directory, or omit it to print to stdout");

  AotRequest request;
  request.generator_name = generator_name;
  request.description = registered_generators().at(generator_name).description;
  request.name = name;
  request.target = target;
  request.emit = emit;
  request.cubin = cubin_option;
  std::string library_flags;
  for (const std::string &library : libraries)
    library_flags += " --generator-library=" + library;
  request.command_line =
      command_line(tool, library_flags, generator_name, *generator, name, target.sm(), cubin_option);
  generator->set_target(target);
  std::vector<EmittedFile> files = compile_generator(*generator, request);

  if (output_dir.empty()) {
    for (const EmittedFile &file : files) {
      if (files.size() > 1)
        llvm::outs() << "// ===== " << file.file_name << " =====\n";
      llvm::outs() << file.contents;
    }
    return 0;
  }
  std::vector<std::pair<std::string, std::string>> contents;
  for (const EmittedFile &file : files)
    contents.emplace_back(file.file_name, file.contents);
  write_files_atomically(output_dir, contents);
  for (const EmittedFile &file : files) {
    llvm::SmallString<256> path(output_dir);
    llvm::sys::path::append(path, file.file_name);
    llvm::outs() << "wrote " << path << "\n";
  }
  return 0;
}

} // namespace
} // namespace coalesce

int main(int argc, char **argv) {
  std::string tool = argc > 0 ? llvm::sys::path::filename(argv[0]).str() : "coalesce-aot";
  try {
    return coalesce::run(argc, argv);
  } catch (const coalesce::UserError &error) {
    llvm::errs() << tool << ": error: " << error.what() << "\n";
    return 1;
  } catch (const coalesce::InternalError &error) {
    llvm::errs() << tool << ": " << error.what() << " (a bug in Coalesce; please report it)\n";
    return 2;
  } catch (const std::exception &error) {
    llvm::errs() << tool << ": internal error: " << error.what() << "\n";
    return 2;
  }
}
