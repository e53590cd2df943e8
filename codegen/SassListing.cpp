#include "codegen/SassListing.h"

#include "codegen/PtxAssembler.h"
#include "codegen/TempFile.h"
#include "dsl/Error.h"

#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <regex>
#include <sstream>

namespace coalesce {

namespace {

constexpr const char *kPtxFile = "kernel.ptx";

std::string trimmed(const std::string &line) {
  size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos)
    return "";
  size_t last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

/// The braces a line opens minus those it closes, outside its comment.
int brace_change(const std::string &line) {
  std::string code = line.substr(0, line.find("//"));
  int change = 0;
  for (char c : code)
    change += c == '{' ? 1 : c == '}' ? -1 : 0;
  return change;
}

/// An instruction of a function body: not a directive, label, comment or brace.
bool is_instruction(const std::string &text) {
  if (text.empty() || text[0] == '.' || text[0] == '{' || text[0] == '}' || text.compare(0, 2, "//") == 0)
    return false;
  std::string code = trimmed(text.substr(0, text.find("//")));
  return !code.empty() && code.back() != ':';
}

} // namespace

std::string ptx_with_own_line_numbers(const std::string &ptx) {
  std::istringstream in(ptx);
  std::ostringstream out;
  bool file_declared = false;
  int depth = 0, number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::string text = trimmed(line);
    bool opens_scope = depth == 1 && text.compare(0, 1, "{") == 0;
    if (depth == 1 && (is_instruction(text) || opens_scope))
      out << "\t.loc 1 " << number << " 0\n";
    out << line << "\n";
    if (!file_declared && text.compare(0, 13, ".address_size") == 0) {
      out << ".file 1 \"" << kPtxFile << "\"\n";
      file_declared = true;
    }
    depth += brace_change(line);
  }
  return out.str();
}

SassListing parse_nvdisasm_line_info(const std::string &text, const std::string &file) {
  // `//## File "kernel.ptx", line 45` or `//## File "/tmp/kernel.ptx", line
  // 45 inlined at ...`; instructions start with their offset, `/*0040*/`.
  static const std::regex location(R"re(//## File "([^"]*)", line (\d+))re");
  static const std::regex instruction(R"(^\s*/\*[0-9a-f]+\*/)");
  SassListing listing;
  std::istringstream in(text);
  int current = 0;
  std::smatch match;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, match, location)) {
      const std::string named = match[1];
      bool ours = named == file || (named.size() > file.size() &&
                                    named.compare(named.size() - file.size() - 1, file.size() + 1, "/" + file) == 0);
      current = ours ? std::stoi(match[2].str()) : 0;
      continue;
    }
    listing.lines.push_back(line);
    listing.ptx_line.push_back(std::regex_search(line, instruction) ? current : 0);
  }
  return listing;
}

PtxasResult assemble_with_line_info(const std::string &ptx, const GpuTarget &target) {
  return assemble_ptx(ptx_with_own_line_numbers(ptx), target, {"-lineinfo"});
}

SassListing disassemble_with_line_info(const PtxasResult &assembled) {
  SassListing none;
  std::string nvdisasm = find_cuda_tool("nvdisasm");
  if (nvdisasm.empty()) {
    none.unavailable = "no SASS: nvdisasm was not found (" + cuda_toolkit_path("bin/nvdisasm") +
                       ", or on PATH; set COALESCE_CUDA_ROOT to the CUDA toolkit)";
    return none;
  }
  TempFile cubin("cubin", "nvdisasm"), listing("sass", "nvdisasm"), errors("log", "nvdisasm");
  {
    std::error_code error;
    llvm::raw_fd_ostream out(cubin.path, error);
    if (error) {
      none.unavailable = "no SASS: cannot write the cubin for nvdisasm: " + error.message();
      return none;
    }
    out << assembled.cubin;
  }
  llvm::StringRef args[] = {nvdisasm, "--print-line-info", "--print-code", cubin.path};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(listing.path),
                                                llvm::StringRef(errors.path)};
  std::string launch_error;
  int status = llvm::sys::ExecuteAndWait(nvdisasm, args, std::nullopt, redirects, 0, 0, &launch_error);
  if (status != 0) {
    none.unavailable = "no SASS: " + nvdisasm + " failed (" +
                       (status < 0 ? launch_error : "exit status " + std::to_string(status)) + "): " +
                       read_temp_file(errors.path);
    return none;
  }
  return parse_nvdisasm_line_info(read_temp_file(listing.path), kPtxFile);
}

} // namespace coalesce
