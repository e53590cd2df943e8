#include "runtime/StagePage.h"

#include <map>
#include <regex>
#include <sstream>
#include <vector>

namespace coalesce {

namespace {

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string escape(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// A block's group: `ko.loop14.preheader` belongs to `ko.loop14`.
bool in_group(const std::string &block, const std::string &group) {
  return block == group || block.compare(0, group.size() + 1, group + ".") == 0;
}

struct LoopLine {
  size_t line;
  std::string name, kind, dim;       // kind: serial, unrolled, gpu_block, ...; dim: x, y, z or ""
  std::vector<size_t> ir, ptx, sass; // linked lines
  std::string note;
};

struct Listing {
  std::vector<std::string> lines;
  std::vector<std::pair<size_t, std::string>> blocks; // label line, block name, in order
};

Listing ir_listing(const std::string &ir) {
  static const std::regex label(R"(^([A-Za-z0-9_.$-]+):)");
  Listing listing{split_lines(ir), {}};
  std::smatch match;
  for (size_t l = 0; l < listing.lines.size(); ++l)
    if (std::regex_search(listing.lines[l], match, label))
      listing.blocks.push_back({l, match[1]});
  return listing;
}

Listing ptx_listing(const std::string &ptx) {
  // `$L__BB0_4:   // %ko.loop` and, for a function's first block,
  // `// %bb.0:    // %entry`.
  static const std::regex label(R"(^\s*(\$L__BB\d+_\d+:|// %bb\.\d+:).*// %([A-Za-z0-9_.$-]+)\s*$)");
  Listing listing{split_lines(ptx), {}};
  std::smatch match;
  for (size_t l = 0; l < listing.lines.size(); ++l)
    if (std::regex_search(listing.lines[l], match, label))
      listing.blocks.push_back({l, match[2]});
  return listing;
}

std::vector<size_t> lines_in_groups(const Listing &listing, const std::vector<std::string> &groups) {
  std::vector<size_t> lines;
  for (const auto &[line, block] : listing.blocks)
    for (const std::string &group : groups)
      if (in_group(block, group)) {
        lines.push_back(line);
        break;
      }
  return lines;
}

/// Lines using `text`; declarations (`declare ... @llvm.nvvm.read...`) are no use.
std::vector<size_t> lines_containing(const std::vector<std::string> &lines, const std::string &text) {
  std::vector<size_t> found;
  for (size_t l = 0; l < lines.size(); ++l)
    if (lines[l].find(text) != std::string::npos && lines[l].compare(0, 8, "declare ") != 0)
      found.push_back(l);
  return found;
}

std::vector<LoopLine> link_loops(const std::vector<std::string> &nest, const Listing &ir, const Listing &ptx) {
  static const std::regex loop_header(R"(^\s*for (\S+) in (\w+)(?:\.([xyz]))?\()");
  std::vector<LoopLine> loops;
  std::smatch match;
  for (size_t l = 0; l < nest.size(); ++l)
    if (std::regex_search(nest[l], match, loop_header))
      loops.push_back({l, match[1], match[2], match[3], {}, {}, {}, {}});

  // The IR's loops of each name, in program order: `ko.loop`, `ko.loop14`.
  std::map<std::string, std::vector<std::string>> ir_loops;
  static const std::regex loop_block(R"(^(.+)\.loop\d*$)");
  for (const auto &[line, block] : ir.blocks)
    if (std::regex_match(block, match, loop_block))
      ir_loops[match[1]].push_back(block);
  std::map<std::string, int> serial_count, serial_seen;
  for (const LoopLine &loop : loops)
    if (loop.kind == "serial")
      ++serial_count[loop.name];

  for (LoopLine &loop : loops) {
    if (loop.kind == "serial") {
      const std::vector<std::string> &groups = ir_loops[loop.name];
      int k = serial_seen[loop.name]++;
      std::vector<std::string> mine = groups;
      if (static_cast<int>(groups.size()) == serial_count[loop.name])
        mine = {groups[static_cast<size_t>(k)]};
      loop.ir = lines_in_groups(ir, mine);
      loop.ptx = lines_in_groups(ptx, mine);
      if (loop.ir.empty())
        loop.note = "no IR loop of this name: LLVM removed or merged it";
    } else if (loop.kind == "gpu_block" || loop.kind == "gpu_thread") {
      std::string reg = (loop.kind == "gpu_block" ? "ctaid." : "tid.") + loop.dim;
      loop.ir = lines_containing(ir.lines, "sreg." + reg + "()");
      loop.ptx = lines_containing(ptx.lines, "%" + reg + ";");
      loop.note = "on the GPU, the index " + reg;
    } else if (loop.kind == "unrolled") {
      loop.note = "unrolled: its copies are inline in the enclosing code";
    } else {
      loop.note = loop.kind + ": no block of its own";
    }
  }
  return loops;
}

/// The SASS lines that came from the PTX `lines` (0-based): a label line
/// stands for its block, up to the next label.
std::vector<size_t> sass_of(const std::vector<size_t> &lines, const Listing &ptx, const SassListing &sass) {
  std::vector<bool> wanted(ptx.lines.size() + 1, false); // by PTX line from 1
  for (size_t line : lines) {
    size_t end = line + 1;
    for (const auto &[label, block] : ptx.blocks)
      if (label == line) {
        end = ptx.lines.size();
        for (const auto &[next, other] : ptx.blocks)
          if (next > line) {
            end = next;
            break;
          }
        break;
      }
    for (size_t l = line; l < end; ++l)
      wanted[l + 1] = true;
  }
  std::vector<size_t> found;
  for (size_t s = 0; s < sass.lines.size(); ++s) {
    int from = sass.ptx_line[s];
    if (from > 0 && static_cast<size_t>(from) < wanted.size() && wanted[static_cast<size_t>(from)])
      found.push_back(s);
  }
  return found;
}

std::string ids(const std::string &prefix, const std::vector<size_t> &lines) {
  std::string text;
  for (size_t line : lines)
    text += (text.empty() ? "" : " ") + prefix + std::to_string(line + 1);
  return text;
}

void write_pane(std::ostream &out, const char *id, const char *heading, const std::vector<std::string> &lines) {
  out << "<section id=\"" << id << "\"><h2>" << heading << "</h2><pre>";
  for (size_t l = 0; l < lines.size(); ++l)
    out << "<span class=\"line\" id=\"" << id << "-" << l + 1 << "\">" << escape(lines[l]) << "</span>";
  out << "</pre></section>\n";
}

const char *kStyle = R"(
body { font-family: sans-serif; margin: 0.5em; background: #fafafa; }
h1 { font-size: 1.2em; margin: 0.2em 0; } h2 { font-size: 1em; margin: 0.2em 0; }
#summary { margin: 0.2em 0 0.5em; color: #333; }
.panes { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 0.5em; }
#source { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 0.5em; margin-bottom: 0.5em; }
#source pre { height: auto; max-height: 25vh; }
table.facts { border-collapse: collapse; font-size: 12px; }
table.facts td { border: 1px solid #ddd; padding: 1px 6px; vertical-align: top; }
table.facts td:first-child { color: #555; white-space: nowrap; }
section pre { position: relative; height: 70vh; overflow: auto; background: #fff; border: 1px solid #ccc; margin: 0;
              font-size: 11px; line-height: 1.35; padding: 0.3em; }
#ptxas pre { height: auto; max-height: 20vh; }
/* Long lines (a wgmma's 128 registers) wrap inside their pane. */
.line { display: block; white-space: pre-wrap; overflow-wrap: anywhere; min-height: 1.35em; }
.loop { cursor: pointer; color: #0645ad; }
.loop .links { font-size: 10px; margin-left: 1em; }
.loop .note { color: #777; font-size: 10px; margin-left: 1em; }
.selected { background: #ffe98a; }
)";

const char *kScript = R"(
const loops = document.querySelectorAll('#nest .loop');
let toIr = 0, toPtx = 0, toSass = 0;
function targets(loop, key) {
  return (loop.dataset[key] || '').split(' ').filter(id => id && document.getElementById(id));
}
function select(loop) {
  document.querySelectorAll('.selected').forEach(e => e.classList.remove('selected'));
  loop.classList.add('selected');
  for (const key of ['ir', 'ptx', 'sass']) {
    const found = targets(loop, key);
    found.forEach(id => document.getElementById(id).classList.add('selected'));
    if (!found.length) continue;
    // Scroll the pane, not the page.
    const line = document.getElementById(found[0]), pane = line.parentElement;
    pane.scrollTop = line.offsetTop - pane.clientHeight / 3;
  }
}
for (const loop of loops) {
  const ir = targets(loop, 'ir'), ptx = targets(loop, 'ptx'), sass = targets(loop, 'sass');
  if (ir.length) ++toIr;
  if (ptx.length) ++toPtx;
  if (sass.length) ++toSass;
  loop.dataset.linked = ir.length + ptx.length + sass.length;
  loop.addEventListener('click', () => select(loop));
}
// page.html#nest-25 opens with loop line 25 selected (links, screenshots).
const start = location.hash && document.getElementById(location.hash.slice(1));
if (start && start.classList.contains('loop')) {
  select(start);
  // The browser scrolls the page to the anchor after this script: back to
  // the top, where the panes show the selection.
  window.addEventListener('load', () => setTimeout(() => window.scrollTo(0, 0), 0));
}
document.getElementById('summary').textContent =
  loops.length + ' loops; ' + toIr + ' linked to LLVM IR, ' + toPtx +
  ' to PTX, ' + toSass + ' to SASS. Click a loop to mark the code it became.';
)";

} // namespace

std::string stage_page_html(const StageTexts &texts) {
  std::vector<std::string> nest = split_lines(texts.loop_nest);
  Listing ir = ir_listing(texts.llvm_ir), ptx = ptx_listing(texts.ptx);
  std::vector<LoopLine> loops = link_loops(nest, ir, ptx);
  for (LoopLine &loop : loops)
    loop.sass = sass_of(loop.ptx, ptx, texts.sass);

  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << escape(texts.title)
      << "</title>\n<style>" << kStyle << "</style></head>\n<body>\n<h1>" << escape(texts.title) << "</h1>\n"
      << "<p id=\"summary\">The loop links need JavaScript; the anchors after each loop work without it.</p>\n"
      << "<div id=\"source\">";
  write_pane(out, "algorithm", "Algorithm", split_lines(texts.algorithm));
  out << "<section id=\"resources\"><h2>Kernels</h2><table class=\"facts\">";
  for (const auto &[what, value] : texts.facts)
    out << "<tr><td>" << escape(what) << "</td><td>" << escape(value) << "</td></tr>";
  out << "</table></section>\n";
  if (!texts.schedule.empty())
    write_pane(out, "schedule", "Schedule (as given)", split_lines(texts.schedule));
  out << "</div>\n<div class=\"panes\">\n<section id=\"nest\"><h2>Loop nest</h2><pre>";
  size_t next_loop = 0;
  for (size_t l = 0; l < nest.size(); ++l) {
    const LoopLine *loop = next_loop < loops.size() && loops[next_loop].line == l ? &loops[next_loop++] : nullptr;
    if (!loop) {
      out << "<span class=\"line\" id=\"nest-" << l + 1 << "\">" << escape(nest[l]) << "</span>";
      continue;
    }
    out << "<span class=\"line loop\" id=\"nest-" << l + 1 << "\" data-loop=\"" << escape(loop->name)
        << "\" data-kind=\"" << escape(loop->kind) << "\" data-ir=\"" << ids("ir-", loop->ir) << "\" data-ptx=\""
        << ids("ptx-", loop->ptx) << "\" data-sass=\"" << ids("sass-", loop->sass) << "\">" << escape(nest[l]);
    if (!loop->ir.empty() || !loop->ptx.empty()) {
      out << "<span class=\"links\">";
      if (!loop->ir.empty())
        out << "<a href=\"#ir-" << loop->ir.front() + 1 << "\">IR</a> ";
      if (!loop->ptx.empty())
        out << "<a href=\"#ptx-" << loop->ptx.front() + 1 << "\">PTX</a> ";
      if (!loop->sass.empty())
        out << "<a href=\"#sass-" << loop->sass.front() + 1 << "\">SASS</a>";
      out << "</span>";
    }
    if (!loop->note.empty())
      out << "<span class=\"note\">" << escape(loop->note) << "</span>";
    out << "</span>";
  }
  out << "</pre></section>\n";
  write_pane(out, "ir", "LLVM IR (optimized, for the GPU)", ir.lines);
  write_pane(out, "ptx", "PTX", ptx.lines);
  write_pane(out, "sass", "SASS (nvdisasm)",
             texts.sass.unavailable.empty() ? texts.sass.lines : std::vector<std::string>{texts.sass.unavailable});
  out << "</div>\n";
  write_pane(out, "ptxas", "ptxas", split_lines(texts.ptxas_report));
  out << "<script>" << kScript << "</script>\n</body></html>\n";
  return out.str();
}

} // namespace coalesce
