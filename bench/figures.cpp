// coalesce-figures: draws the pictures in docs/images from lowered loop
// nests, not by hand. It walks the serial nest of a schedule (what
// Pipeline::loop_nest prints) for one block, with small concrete sizes,
// evaluating every loop bound, let and store index, and records which thread
// and register writes each output element, or where each element of a staged
// tile lands in shared memory. Usage:
//
//   build/bench/coalesce-figures [--out-dir=docs/images]
//
// writes register_block.svg (the block tile split among threads and register
// blocks, FFMA GEMM), wgmma_swizzle.svg (a staged A tile in the 128-byte
// swizzled layout of the warpgroup MMA) and epilogue_placement.svg (the loop
// structure, with the reduction and the fused epilogue marked).

#include "examples/Gemm.h"
#include "examples/Schedules.h"
#include "scheduler/EvaluateInt.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "scheduler/Lower.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

using Values = std::map<std::string, int64_t>;

// One store the walk met: the buffer, its evaluated indices and the values
// of the loops around it, by name.
struct Visit {
  std::string buffer;
  std::vector<int64_t> indices;
  Values loops;
  const Store *store;
  Values values; // every binding in scope (loops and integer lets)
};

// Runs the nest's integer control flow: loops (block loops pinned to 0, so
// one block is drawn), integer lets, conditions; calls `on_store` for every
// store it reaches. Float values are never evaluated.
class Walk {
public:
  Walk(Values params, std::function<void(const Visit &)> on_store)
      : values_(std::move(params)), on_store_(std::move(on_store)) {}

  void run(const Stmt &s) {
    if (!s.defined())
      return;
    if (const auto *loop = s.as<For>()) {
      int64_t min = evaluate_int(loop->min, values_), extent = evaluate_int(loop->extent, values_);
      if (loop->for_kind == ForKind::GpuBlock)
        extent = std::min<int64_t>(extent, 1);
      for (int64_t v = min; v < min + extent; ++v) {
        values_[loop->name] = v;
        loops_[loop->name] = v;
        run(loop->body);
      }
      values_.erase(loop->name);
      loops_.erase(loop->name);
    } else if (const auto *let = s.as<LetStmt>()) {
      bool integer = let->value.type().is_int();
      if (integer)
        values_[let->name] = evaluate_int(let->value, values_);
      run(let->body);
      if (integer)
        values_.erase(let->name);
    } else if (const auto *block = s.as<Block>()) {
      for (const Stmt &part : block->stmts)
        run(part);
    } else if (const auto *branch = s.as<IfThenElse>()) {
      if (evaluate_int(branch->condition, values_))
        run(branch->then_case);
      else
        run(branch->else_case);
    } else if (const auto *alloc = s.as<Allocate>()) {
      run(alloc->body);
    } else if (const auto *store = s.as<Store>()) {
      Visit visit{store->buffer, {}, loops_, store, values_};
      for (const Expr &index : store->indices)
        visit.indices.push_back(evaluate_int(index, values_));
      on_store_(visit);
    }
    // Evaluate, Barrier, WarpMma: nothing to draw.
  }

private:
  Values values_, loops_;
  std::function<void(const Visit &)> on_store_;
};

std::string color(int n, int count) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "hsl(%d, 65%%, %d%%)", n * 360 / std::max(count, 1), n % 2 ? 70 : 82);
  return buffer;
}

void write(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  out << text;
  if (!out) {
    std::fprintf(stderr, "coalesce-figures: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("wrote %s\n", path.c_str());
}

// The 32 x 32 block tile of an FFMA GEMM with 4 x 4 threads and 8 x 8
// register blocks (examples/Schedules.h's register_blocked): which thread
// computes each output element.
void register_block_figure(const std::string &dir) {
  examples::Gemm g = examples::make_gemm(examples::Epilogue::BiasRelu);
  examples::schedule_register_blocked(g, 32, 8);
  // One copy of the epilogue: the picture is about where it runs, not about
  // the unguarded copy for whole tiles.
  g.out.partition_full_tiles(false);
  Stmt nest = lower_loop_nest(g.out);
  const int tile = 32, cell = 16;
  std::map<std::pair<int64_t, int64_t>, std::pair<int, std::string>> owner;
  Walk walk({{"M", tile}, {"N", tile}, {"K", 4}}, [&](const Visit &v) {
    if (v.buffer != "out")
      return;
    int thread = int(v.loops.at("ti") * 4 + v.loops.at("tj"));
    owner[{v.indices[0], v.indices[1]}] = {thread, std::to_string(thread)};
  });
  walk.run(nest);
  std::ostringstream svg;
  int size = tile * cell;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << size + 20 << "' height='" << size + 60
      << "' font-family='monospace' font-size='8'>\n"
      << "<text x='10' y='14' font-size='12'>32 x 32 block tile of out: thread ti*4+tj per element</text>\n";
  for (const auto &[ij, who] : owner) {
    int x = 10 + int(ij.second) * cell, y = 24 + int(ij.first) * cell;
    svg << "<rect x='" << x << "' y='" << y << "' width='" << cell << "' height='" << cell << "' fill='"
        << color(who.first, 16) << "' stroke='white' stroke-width='0.5'/><text x='" << x + 3 << "' y='" << y + 11
        << "'>" << who.second << "</text>\n";
  }
  svg << "<text x='10' y='" << size + 44 << "' font-size='11'>register_block(..., 8, 8): 4 x 4 threads, 8 x 8 "
      << "registers each</text>\n</svg>\n";
  write(dir + "/register_block.svg", svg.str());
}

// The first 1024-byte atom of A's staged tile for the warpgroup MMA: 8 rows
// of 64 bf16; each 16-byte column j of row r lands at position j ^ (r % 8).
void swizzle_figure(const std::string &dir) {
  examples::Gemm g = examples::make_gemm(examples::Epilogue::None, BFloat(16), BFloat(16));
  MmaTiling t = default_mma_tiling(MmaKind::BF16_wgmma_m64k16, 64, 64, GpuTarget().sm_count());
  t.block_m = t.block_n = t.warp_n = 64;
  // The threads' 16-byte copies show the layout column by column (the
  // TMA's boxes write the same layout whole).
  t.tma = false;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  Stmt nest = lower_loop_nest(g.out);
  // (row, physical 16-byte column) -> logical 16-byte column, from the
  // 16-byte copies into slot 0 of A_shared: indices [slot, block, row,
  // element], source A[row, column] (a clamped load by then).
  std::map<std::pair<int64_t, int64_t>, int64_t> logical;
  Walk walk({{"M", 64}, {"N", 64}, {"K", 64}}, [&](const Visit &v) {
    if (v.buffer != "A_shared" || v.indices.size() != 4 || v.indices[0] != 0 || v.indices[2] >= 8)
      return;
    const auto *copy = v.store->value.as<Call>();
    const auto *source = copy && !copy->args.empty() ? copy->args[0].as<Load>() : nullptr;
    if (!source || copy->intrinsic != Intrinsic::AsyncLoadVector || source->indices.size() != 2)
      return;
    int64_t column = evaluate_int(source->indices[1], v.values);
    logical[{v.indices[2], v.indices[3] / 8}] = column / 8;
  });
  walk.run(nest);
  const int w = 64, h = 30;
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << 8 * w + 220 << "' height='" << 8 * h + 80
      << "' font-family='monospace' font-size='12'>\n"
      << "<text x='10' y='16'>A_shared, rows 0-7 (one 1024-byte atom): 16-byte column of A stored at each position</text>\n";
  for (int p = 0; p < 8; ++p)
    svg << "<text x='" << 100 + p * w + 16 << "' y='40'>pos " << p << "</text>\n";
  for (const auto &[rp, column] : logical) {
    int x = 100 + int(rp.second) * w, y = 48 + int(rp.first) * h;
    svg << "<rect x='" << x << "' y='" << y << "' width='" << w << "' height='" << h << "' fill='"
        << color(int(column), 8) << "' stroke='white'/><text x='" << x + 14 << "' y='" << y + 19 << "'>col "
        << column << "</text>\n";
  }
  for (int r = 0; r < 8; ++r)
    svg << "<text x='10' y='" << 48 + r * h + 19 << "'>row " << r << "</text>\n";
  svg << "<text x='10' y='" << 8 * h + 70 << "'>position = column ^ (row % 8): the layout the wgmma descriptor "
      << "names (128-byte swizzle)</text>\n</svg>\n";
  write(dir + "/wgmma_swizzle.svg", svg.str());
}

// The loop structure of the fused GEMM + bias + ReLU (register-blocked FFMA
// schedule): one box per loop, the reduction loop and the epilogue's store
// marked, so the picture shows the epilogue after the whole K loop.
void epilogue_figure(const std::string &dir) {
  examples::Gemm g = examples::make_gemm(examples::Epilogue::BiasRelu);
  examples::schedule_register_blocked(g, 32, 8);
  // One copy of the epilogue: the picture is about where it runs, not about
  // the unguarded copy for whole tiles.
  g.out.partition_full_tiles(false);
  Stmt nest = lower_loop_nest(g.out);
  std::ostringstream boxes;
  int y = 30, max_depth = 0;
  std::function<void(const Stmt &, int)> draw = [&](const Stmt &s, int depth) {
    if (!s.defined())
      return;
    max_depth = std::max(max_depth, depth);
    if (const auto *loop = s.as<For>()) {
      bool reduction = !loop->reduction_of.empty();
      boxes << "<text x='" << 10 + depth * 18 << "' y='" << y << "' fill='" << (reduction ? "#b03030" : "#303030")
            << "'>for " << loop->name << " (" << for_kind_name(loop->for_kind) << ")"
            << (reduction ? "   # reduction of " + loop->reduction_of.front() : "") << "</text>\n";
      y += 16;
      draw(loop->body, depth + 1);
    } else if (const auto *let = s.as<LetStmt>()) {
      draw(let->body, depth);
    } else if (const auto *block = s.as<Block>()) {
      for (const Stmt &part : block->stmts)
        draw(part, depth);
    } else if (const auto *branch = s.as<IfThenElse>()) {
      draw(branch->then_case, depth);
      draw(branch->else_case, depth);
    } else if (const auto *alloc = s.as<Allocate>()) {
      draw(alloc->body, depth);
    } else if (const auto *store = s.as<Store>()) {
      bool epilogue = store->buffer == "out";
      boxes << "<text x='" << 10 + depth * 18 << "' y='" << y << "' fill='" << (epilogue ? "#2060c0" : "#606060")
            << "'>" << store->buffer << "[...] = " << (epilogue ? "relu(acc + bias)   # the fused epilogue" : "...")
            << "</text>\n";
      y += 16;
    }
  };
  draw(nest, 0);
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << 620 << "' height='" << y + 20
      << "' font-family='monospace' font-size='12'>\n<text x='10' y='16' font-size='13'>Loops of the fused GEMM + "
         "bias + ReLU (red: the K loop; blue: the epilogue, after it)</text>\n"
      << boxes.str() << "</svg>\n";
  write(dir + "/epilogue_placement.svg", svg.str());
}

} // namespace

int main(int argc, char **argv) {
  std::string dir = "docs/images";
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg.rfind("--out-dir=", 0) == 0 && arg.size() > 10) {
      dir = arg.substr(10);
    } else {
      std::fprintf(stderr, "coalesce-figures: unknown argument '%s'; usage: coalesce-figures [--out-dir=DIR]\n",
                   arg.c_str());
      return 2;
    }
  }
  try {
    register_block_figure(dir);
    swizzle_figure(dir);
    epilogue_figure(dir);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "coalesce-figures: %s\n", e.what());
    return 1;
  }
  return 0;
}
