// The stage page (runtime/StagePage.h, Pipeline::stage_page, coalesce-aot
// --emit=html): its loops are linked to the LLVM IR and PTX they became, it
// is written whole or not at all, and it renders in headless Chromium, where
// its script must run and link every serial and GPU loop (the test skips,
// saying so, only where chromium is not installed; scripts/setup.sh installs
// it).

#include "codegen/PtxAssembler.h"
#include "codegen/SassListing.h"
#include "runtime/Coalesce.h"
#include "runtime/StagePage.h"

#include "ErrorCapture.h"
#include "TempDir.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace coalesce;

namespace {

/// The README's fused GEMM + bias + GELU.
Func scheduled_gemm() {
  Param M("M"), N("N"), K("K");
  Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N}), bias("bias", Float(32), {N});
  Var i("i"), j("j"), bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RDom k(0, K, "k");
  RVar ko("ko"), ki("ki");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = gelu(acc(i, j) + bias(j));
  out.tile(i, j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, 4, 4).gpu_threads({ti, tj});
  out.fuse_epilogue(acc, bj);
  acc.update().split(k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki)
      .stage_in_shared(A, ko).stage_in_shared(B, ko);
  return out;
}

using coalesce::testing::TempDir;

std::string read_file(const fs::path &path) { return coalesce::testing::read_file(path.string()); }

/// The opening tag of the element with `id`, or "".
std::string tag_of(const std::string &page, const std::string &id) {
  size_t at = page.find("id=\"" + id + "\"");
  if (at == std::string::npos)
    return "";
  size_t open = page.rfind('<', at), close = page.find('>', at);
  return page.substr(open, close - open + 1);
}

/// The text of the line element with `id` (up to its first inner tag).
std::string line_text(const std::string &page, const std::string &id) {
  size_t at = page.find("id=\"" + id + "\">");
  if (at == std::string::npos)
    return "";
  size_t start = page.find('>', at) + 1;
  return page.substr(start, page.find('<', start) - start);
}

std::string attribute(const std::string &tag, const std::string &name) {
  std::smatch match;
  std::regex pattern(name + "=\"([^\"]*)\"");
  return std::regex_search(tag, match, pattern) ? std::string(match[1]) : "";
}

} // namespace

TEST_CASE("the k-th serial loop of a name links to the k-th IR loop of that name and to its PTX labels") {
  StageTexts texts;
  texts.title = "a <test> & page";
  texts.loop_nest = "for bi in gpu_block.x(0, 4):\n"
                    "  for ko in serial(0, 4):\n"
                    "    for ri in unrolled(0, 2):\n"
                    "      x = 1\n"
                    "  for ko in serial(4, 1):\n"
                    "    x = 2\n";
  texts.llvm_ir = "entry:\n"
                  "  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
                  "ko.loop:\n"
                  "  br label %ko.loop\n"
                  "ko.loop3.preheader:\n"
                  "ko.loop3:\n"
                  "  br label %ko.loop3\n"
                  "declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n";
  texts.ptx = "\tmov.u32 \t%r1, %ctaid.x;\n"
              "$L__BB0_1:                              // %ko.loop\n"
              "\tbra.uni $L__BB0_1;\n"
              "$L__BB0_2:                              // %ko.loop3\n";
  texts.ptxas_report = "ptxas info    : Used 40 registers";
  std::string page = stage_page_html(texts);

  CHECK(page.find("a &lt;test&gt; &amp; page") != std::string::npos);
  CHECK(page.find("<test>") == std::string::npos);
  std::string block = tag_of(page, "nest-1"), first = tag_of(page, "nest-2"), unrolled = tag_of(page, "nest-3"),
              second = tag_of(page, "nest-5");
  CHECK(attribute(block, "data-ir") == "ir-2"); // not the declaration
  CHECK(attribute(block, "data-ptx") == "ptx-1");
  CHECK(attribute(first, "data-ir") == "ir-3");
  CHECK(attribute(first, "data-ptx") == "ptx-2");
  CHECK(attribute(second, "data-ir") == "ir-5 ir-6");
  CHECK(attribute(second, "data-ptx") == "ptx-4");
  CHECK(attribute(unrolled, "data-ir").empty());
  CHECK(unrolled.find("data-kind=\"unrolled\"") != std::string::npos);
  CHECK(page.find("ptxas info    : Used 40 registers") != std::string::npos);
  // Self-contained: nothing fetched from anywhere.
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("http") == std::string::npos);
}

TEST_CASE("a pipeline's stage page links each ko loop to its IR loop and its PTX label") {
  Pipeline pipeline(scheduled_gemm());
  std::string page = pipeline.stage_page();
  for (const char *section : {"nest", "ir", "ptx", "ptxas"})
    CHECK(page.find(std::string("<section id=\"") + section + "\">") != std::string::npos);
  std::regex serial_ko("data-loop=\"ko\" data-kind=\"serial\" data-ir=\"([^\"]*)\" data-ptx=\"([^\"]*)\"");
  int serial_loops = 0;
  for (std::sregex_iterator it(page.begin(), page.end(), serial_ko), end; it != end; ++it, ++serial_loops) {
    std::string ir = (*it)[1], ptx = (*it)[2];
    REQUIRE_FALSE(ir.empty());
    REQUIRE_FALSE(ptx.empty());
    std::string ir_label = line_text(page, ir.substr(0, ir.find(' ')));
    std::string ptx_label = line_text(page, ptx.substr(0, ptx.find(' ')));
    CHECK_MESSAGE(ir_label.compare(0, 7, "ko.loop") == 0, ir_label);
    CHECK_MESSAGE(ptx_label.find("// %ko.loop") != std::string::npos, ptx_label);
  }
  CHECK(serial_loops == 2); // the K/8 full steps and the partial one
}

TEST_CASE("write_stage_page writes the whole page, or nothing and a UserError") {
  TempDir dir;
  Pipeline pipeline(scheduled_gemm());
  fs::path page = dir.path / "gemm.html";
  pipeline.write_stage_page(page.string());
  std::string text = read_file(page);
  CHECK(text.compare(0, 15, "<!DOCTYPE html>") == 0);
  CHECK(text.find("</html>") != std::string::npos);

  fs::path nowhere = dir.path / "missing" / "gemm.html";
  std::string message = coalesce::testing::user_error_of([&] { pipeline.write_stage_page(nowhere.string()); });
  CHECK(message.find(nowhere.string()) != std::string::npos);
  CHECK_FALSE(fs::exists(nowhere));
  CHECK_FALSE(fs::exists(dir.path / "missing"));
}

TEST_CASE("coalesce-aot --emit=html writes NAME.html, rendered by headless Chromium with every loop linked") {
  const std::string tool = COALESCE_BINARY_DIR "/runtime/aot/coalesce-aot";
  REQUIRE_MESSAGE(fs::exists(tool), tool, " is missing: build coalesce-aot first");
  TempDir dir;
  std::string command = "'" + tool + "' --emit=html --name=gemm --output-dir='" + dir.path.string() + "' >/dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  fs::path page = dir.path / "gemm.html";
  REQUIRE(fs::exists(page));
  std::string html = read_file(page);

  if (std::system("command -v chromium >/dev/null 2>&1") != 0) {
    MESSAGE("skipped rendering: chromium is not installed (scripts/setup.sh installs Debian's chromium)");
    return;
  }
  // Open the page on the first serial loop: the script selects it and marks
  // the IR and PTX it links to. --dump-dom prints the DOM after the script.
  std::smatch match;
  REQUIRE(std::regex_search(html, match, std::regex("id=\"(nest-[0-9]+)\" data-loop=\"ko\" data-kind=\"serial\"")));
  std::string loop_id = match[1];
  fs::path dom = dir.path / "dom.html";
  std::string render = "chromium --headless --no-sandbox --disable-gpu --dump-dom 'file://" + page.string() + "#" +
                       loop_id + "' >'" + dom.string() + "' 2>/dev/null";
  REQUIRE(std::system(render.c_str()) == 0);
  std::string rendered = read_file(dom);

  std::regex summary(R"(<p id="summary">(\d+) loops; (\d+) linked to LLVM IR, (\d+) to PTX, (\d+) to SASS\.)");
  REQUIRE_MESSAGE(std::regex_search(rendered, match, summary), "the script did not run: no summary");
  int loops = std::stoi(match[1]), to_ir = std::stoi(match[2]), to_ptx = std::stoi(match[3]);
  // The unrolled loops have no code of their own; every other loop has.
  int unrolled = 0;
  for (size_t at = 0; (at = html.find("data-kind=\"unrolled\"", at)) != std::string::npos; ++at)
    ++unrolled;
  CHECK(to_ir == loops - unrolled);
  CHECK(to_ptx == loops - unrolled);

  std::string selected_loop = tag_of(rendered, loop_id);
  CHECK(selected_loop.find("selected") != std::string::npos);
  std::string ir = attribute(selected_loop, "data-ir"), ptx = attribute(selected_loop, "data-ptx");
  REQUIRE_FALSE(ir.empty());
  REQUIRE_FALSE(ptx.empty());
  CHECK(tag_of(rendered, ir.substr(0, ir.find(' '))).find("selected") != std::string::npos);
  CHECK(tag_of(rendered, ptx.substr(0, ptx.find(' '))).find("selected") != std::string::npos);
  // With nvdisasm (the CUDA toolkit's), the serial loop's SASS is marked too.
  const int to_sass = std::stoi(match[4]);
  if (html.find("no SASS: nvdisasm was not found") != std::string::npos) {
    MESSAGE("no SASS to link: nvdisasm is not installed");
    CHECK(to_sass == 0);
  } else {
    CHECK(to_sass > 0);
    std::string sass = attribute(selected_loop, "data-sass");
    REQUIRE_FALSE(sass.empty());
    CHECK(tag_of(rendered, sass.substr(0, sass.find(' '))).find("selected") != std::string::npos);
  }
  // The kernels' facts, the algorithm and the flags that scheduled it.
  CHECK(html.find("<td>kernel</td><td>coalesce_gemm</td>") != std::string::npos);
  CHECK(std::regex_search(html, std::regex("<td>registers</td><td>[0-9]+ per thread</td>")));
  CHECK(html.find("<td>blocks per SM</td>") != std::string::npos);
  CHECK(html.find("out(i, j) = 0.5f*(acc(i, j) + bias(j))") != std::string::npos);
  CHECK(html.find("coalesce-aot --generator=gemm --name=gemm") != std::string::npos);

  // A screenshot: the page renders (a PNG of the window's size, not blank).
  fs::path shot = dir.path / "page.png";
  std::string screenshot = "chromium --headless --no-sandbox --disable-gpu --window-size=1600,1000 --screenshot='" +
                           shot.string() + "' 'file://" + page.string() + "#" + loop_id + "' >/dev/null 2>&1";
  REQUIRE(std::system(screenshot.c_str()) == 0);
  REQUIRE(fs::exists(shot));
  CHECK(fs::file_size(shot) > 20000);
  CHECK(read_file(shot).compare(1, 3, "PNG") == 0);
}

TEST_CASE("a loop links to the SASS of its PTX block, up to the next label") {
  StageTexts texts;
  texts.title = "sass";
  texts.loop_nest = "for bi in gpu_block.x(0, 4):\n"
                    "  for ko in serial(0, 4):\n"
                    "    x = 1\n";
  texts.llvm_ir = "ko.loop:\n  br label %ko.loop\n";
  texts.ptx = "\tmov.u32 \t%r1, %ctaid.x;\n"                         // 1
              "$L__BB0_1:                              // %ko.loop\n" // 2
              "\tadd.s32 \t%r2, %r2, 1;\n"                           // 3
              "\tbra.uni $L__BB0_1;\n"                                // 4
              "$L__BB0_2:                              // %exit\n"    // 5
              "\tret;\n";                                             // 6
  // nvdisasm's listing as it prints it (H200, CUDA 12): the line comments
  // name the PTX line each instruction came from.
  texts.sass = parse_nvdisasm_line_info("coalesce_out:\n"
                                        "\t//## File \"kernel.ptx\", line 1\n"
                                        "        /*0000*/                   S2R R7, SR_CTAID.X ;\n"
                                        ".L_x_1:\n"
                                        "\t//## File \"kernel.ptx\", line 3\n"
                                        "        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;\n"
                                        "\t//## File \"/tmp/kernel.ptx\", line 4\n"
                                        "        /*0020*/                   BRA `(.L_x_1) ;\n"
                                        "\t//## File \"other.cu\", line 4\n"
                                        "        /*0030*/                   NOP;\n"
                                        "\t//## File \"kernel.ptx\", line 6\n"
                                        "        /*0040*/                   EXIT ;\n");
  REQUIRE(texts.sass.lines.size() == 7); // the line comments dropped
  // Labels carry no line; another file's line is not the PTX's.
  CHECK(texts.sass.ptx_line == std::vector<int>{0, 1, 0, 3, 4, 0, 6});
  std::string page = stage_page_html(texts);
  // ko's block runs from its label (PTX line 2) to the next (line 5).
  CHECK(attribute(tag_of(page, "nest-2"), "data-sass") == "sass-4 sass-5");
  CHECK(attribute(tag_of(page, "nest-1"), "data-sass") == "sass-2"); // the S2R of %ctaid.x
  CHECK(page.find("<a href=\"#sass-4\">SASS</a>") != std::string::npos);
  CHECK(line_text(page, "sass-7").find("EXIT") != std::string::npos);

  texts.sass = SassListing{{}, {}, "no SASS: nvdisasm was not found"};
  page = stage_page_html(texts);
  CHECK(attribute(tag_of(page, "nest-2"), "data-sass").empty());
  CHECK(line_text(page, "sass-1") == "no SASS: nvdisasm was not found");
}

TEST_CASE("the PTX's own line numbers: a .loc before each instruction of a body, none elsewhere, and ptxas takes it") {
  const std::string ptx = ".version 8.0\n"                 // 1
                          ".target sm_90a\n"               // 2
                          ".address_size 64\n"             // 3
                          ".visible .entry k(\n"           // 4
                          "\t.param .u32 k_param_0\n"      // 5
                          ")\n"                             // 6
                          "{\n"                             // 7
                          "\t.reg .b32 \t%r<3>;\n"          // 8
                          "\tld.param.b32 \t%r1, [k_param_0];\n" // 9
                          "$L__BB0_1:\n"                    // 10
                          "\t// a comment\n"               // 11
                          "\t{\n"                          // 12
                          "\t.reg .pred p;\n"              // 13
                          "\tsetp.ne.b32 p, %r1, 0;\n"     // 14
                          "\t}\n"                          // 15
                          "\tadd.s32 \t%r2, %r1, 1; // {\n" // 16: a brace in a comment
                          "\tret;\n"                       // 17
                          "}\n";                            // 18
  std::string numbered = ptx_with_own_line_numbers(ptx);
  CHECK(numbered.find(".address_size 64\n.file 1 \"kernel.ptx\"\n") != std::string::npos);
  for (int line : {9, 12, 16, 17}) {
    CAPTURE(line);
    CHECK(numbered.find("\t.loc 1 " + std::to_string(line) + " 0\n") != std::string::npos);
  }
  for (int line : {5, 8, 10, 11, 13, 14, 15, 18}) {
    CAPTURE(line);
    CHECK(numbered.find("\t.loc 1 " + std::to_string(line) + " 0\n") == std::string::npos);
  }
  if (!ptxas_available()) {
    MESSAGE("skipped assembling: ptxas was not found");
    return;
  }
  // A real kernel's PTX, numbered, assembles with -lineinfo.
  Pipeline pipeline(scheduled_gemm());
  PtxasResult assembled = assemble_ptx(ptx_with_own_line_numbers(pipeline.ptx()), GpuTarget(), {"-lineinfo"});
  CHECK_FALSE(assembled.cubin.empty());
}
