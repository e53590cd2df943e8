// Before/after tests of single lowering passes, comparing printed IR: small
// hand-built statements for the local rewrites, lowered schedules for the
// passes that need a whole nest (staging, thread fusion, loop building).

#include <doctest/doctest.h>

#include "ErrorCapture.h"
#include "TextCount.h"
#include "WarpgroupGemms.h"
#include "dsl/Activations.h"
#include "dsl/Func.h"
#include "dsl/IROperator.h"
#include "dsl/IRPrinter.h"
#include "dsl/IRVisitor.h"
#include "scheduler/ClampInputLoads.h"
#include "scheduler/Environment.h"
#include "scheduler/FlattenStorage.h"
#include "scheduler/Lower.h"
#include "scheduler/ReallocateRegisters.h"
#include "scheduler/Simplify.h"
#include "scheduler/StripStagePrefixes.h"
#include "scheduler/UnrollLoops.h"

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace coalesce;

namespace {

Expr int_var(const std::string &name) { return Variable::make(Int(32), name); }
Expr float_var(const std::string &name) { return Variable::make(Float(32), name); }

// ------------------------------------------------- reading a printed nest

struct Line {
  int indent; // in levels of two spaces
  std::string text;
};

std::vector<Line> lines_of(const std::string &printed) {
  std::vector<Line> lines;
  std::istringstream in(printed);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    size_t spaces = line.find_first_not_of(' ');
    lines.push_back(Line{static_cast<int>(spaces / 2), line.substr(spaces)});
  }
  return lines;
}

bool starts_with(const std::string &text, const std::string &prefix) { return text.rfind(prefix, 0) == 0; }

// The lines that enclose line `n`: each earlier line with a smaller indent
// than everything between it and n.
std::vector<Line> enclosing(const std::vector<Line> &lines, size_t n) {
  std::vector<Line> outer;
  int indent = lines[n].indent;
  for (size_t m = n; m-- > 0;)
    if (lines[m].indent < indent) {
      outer.push_back(lines[m]);
      indent = lines[m].indent;
    }
  return outer;
}

// Index of the first line that starts with `prefix`, or lines.size().
size_t find_line(const std::vector<Line> &lines, const std::string &prefix, size_t from = 0) {
  for (size_t n = from; n < lines.size(); ++n)
    if (starts_with(lines[n].text, prefix))
      return n;
  return lines.size();
}

// The lines nested inside line n.
std::vector<Line> body_of(const std::vector<Line> &lines, size_t n) {
  std::vector<Line> body;
  for (size_t m = n + 1; m < lines.size() && lines[m].indent > lines[n].indent; ++m)
    body.push_back(lines[m]);
  return body;
}

size_t count_lines(const std::vector<Line> &lines, const std::string &prefix) {
  size_t count = 0;
  for (const Line &line : lines)
    count += starts_with(line.text, prefix);
  return count;
}

// True if `text` reads buffer `name` (name[ not preceded by an identifier character).
bool reads(const std::string &text, const std::string &name) {
  return std::regex_search(text, std::regex("(^|[^A-Za-z0-9_])" + name + "\\["));
}

// C = gelu(A*B + bias) with the fused schedule of DESIGN.md.
struct Gemm {
  Param M{"M"}, N{"N"}, K{"K"};
  Input A{"A", Float(32), {M, K}}, B{"B", Float(32), {K, N}}, bias{"bias", Float(32), {N}};
  Var i{"i"}, j{"j"}, bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, ti{"ti"}, tj{"tj"}, ri{"ri"}, rj{"rj"};
  RDom k{0, K, "k"};
  RVar ko{"ko"}, ki{"ki"};
  Func acc{"acc"}, out{"out"};

  Gemm() {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * B(k, j);
    out(i, j) = gelu(acc(i, j) + bias(j));
  }
  // 64 x 64 blocks of 16 x 16 threads, 4 x 4 per thread, K 8 at a time.
  Gemm &fused(bool stage_a, bool stage_b) {
    out.tile(i, j, bi, bj, ii, jj, 64, 64)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 4, 4)
        .gpu_threads({ti, tj});
    out.fuse_epilogue(acc, bj);
    acc.update().split(k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);
    if (stage_a)
      acc.update().stage_in_shared(A, ko);
    if (stage_b)
      acc.update().stage_in_shared(B, ko);
    return *this;
  }
};

} // namespace

// ------------------------------------------------------------- simplify

TEST_CASE("simplify folds integer constants") {
  CHECK(to_string(Expr(2) + Expr(3) * 4) == "2 + 3*4");
  CHECK(to_string(simplify(Expr(2) + Expr(3) * 4)) == "14");
  CHECK(to_string(simplify(Expr(7) / 2)) == "3");
  CHECK(to_string(simplify(Expr(7) % 3)) == "1");
  CHECK(to_string(simplify(min(Expr(3), 5))) == "3");
  CHECK(to_string(simplify(max(Expr(3), 5))) == "5");
  Expr ti = int_var("ti"), x = float_var("x");
  CHECK(to_string(simplify(ti + 1 < ti + 2)) == "true");
  CHECK(to_string(simplify(ti * 2 >= ti * 2 + 1)) == "false");
  CHECK(to_string(simplify(select(ti < ti + 1, x, x * 2.0f))) == "x");
  CHECK(to_string(simplify(ti / 1)) == "ti");
}

TEST_CASE("simplify cancels linear integer terms") {
  Expr bi = int_var("bi"), ti = int_var("ti");
  Expr e = bi * 64 + ti * 4 - bi * 64;
  CHECK(to_string(e) == "bi*64 + ti*4 - bi*64");
  CHECK(to_string(simplify(e)) == "ti*4");
  CHECK(to_string(simplify(ti * 2 + ti * 3 + 1 - 1)) == "ti*5");
  CHECK(to_string(simplify((bi * 64 + ti) - (bi * 64 + ti))) == "0");
  CHECK(to_string(simplify(4 * ti + 3 - 1)) == "ti*4 + 2");
}

TEST_CASE("simplify never changes floating-point arithmetic") {
  Expr x = float_var("x"), y = float_var("y");
  CHECK(to_string(simplify(x * 0.0f)) == "x*0.0f");
  CHECK(to_string(simplify(x + 0.0f)) == "x + 0.0f");
  CHECK(to_string(simplify(x + y - x)) == "x + y - x");
  CHECK(to_string(simplify(x * 1.0f)) == "x*1.0f");
  CHECK(to_string(simplify(Expr(1.5f) + Expr(2.0f))) == "1.5f + 2.0f");
}

TEST_CASE("simplify drops dead branches and loops and substitutes trivial lets") {
  Expr x = float_var("x"), i = int_var("i");
  Stmt store = Store::make("buf", {i}, x);
  Stmt s = Block::make({
      IfThenElse::make(i < i + 1, store, Store::make("buf", {i}, 0.0f)),
      For::make("never", 0, 0, ForKind::Serial, store),
      For::make("once", 3, 1, ForKind::Serial, Store::make("buf", {int_var("once") * 2}, x)),
      LetStmt::make("c", 5, Store::make("buf", {int_var("c") + 1}, x)),
      Barrier::make(),
      Barrier::make(),
  });
  CHECK(to_string(s) == "if i < i + 1:\n"
                        "  buf[i] = x\n"
                        "else:\n"
                        "  buf[i] = 0.0f\n"
                        "for never in serial(0, 0):\n"
                        "  buf[i] = x\n"
                        "for once in serial(3, 1):\n"
                        "  buf[once*2] = x\n"
                        "let c = 5\n"
                        "buf[c + 1] = x\n"
                        "barrier\n"
                        "barrier\n");
  CHECK(to_string(simplify(s)) == "buf[i] = x\n"
                                  "buf[6] = x\n"
                                  "buf[6] = x\n"
                                  "barrier\n");
}

TEST_CASE("simplify keeps a GPU loop of extent one") {
  Stmt s = For::make("t", 0, 1, ForKind::GpuThread, Store::make("buf", {int_var("t")}, 1.0f), 0);
  CHECK(to_string(simplify(s)) == "for t in gpu_thread.x(0, 1):\n  buf[t] = 1.0f\n");
}

TEST_CASE("simplify substitutes a loop of extent one only where its variable is in scope") {
  // The inner loop rebinds x: its uses are the inner loop's, not the outer one's.
  Expr x = int_var("x");
  Stmt s = For::make("x", 3, 1, ForKind::Serial,
                     Block::make({Store::make("buf", {x}, 1.0f),
                                  For::make("x", 0, int_var("N"), ForKind::Serial, Store::make("buf", {x + 1}, 2.0f))}));
  CHECK(to_string(simplify(s)) == "buf[3] = 1.0f\n"
                                  "for x in serial(0, N):\n"
                                  "  buf[x + 1] = 2.0f\n");
  Stmt let = LetStmt::make("y", 7, Block::make({Store::make("buf", {int_var("y")}, 1.0f),
                                                 LetStmt::make("y", int_var("N") * 2,
                                                               Store::make("buf", {int_var("y")}, 2.0f))}));
  CHECK(to_string(simplify(let)) == "buf[7] = 1.0f\n"
                                    "let y = N*2\n"
                                    "buf[y] = 2.0f\n");
}

// ---------------------------------------------------------- unroll_loops

TEST_CASE("unroll_loops repeats the body with the loop variable a constant") {
  Expr x = float_var("x");
  Stmt s = For::make("r", 0, 3, ForKind::Unrolled,
                     For::make("s", 0, int_var("N"), ForKind::Serial,
                               Store::make("buf", {int_var("r") * 2 + int_var("s")}, x)));
  CHECK(to_string(s) == "for r in unrolled(0, 3):\n"
                        "  for s in serial(0, N):\n"
                        "    buf[r*2 + s] = x\n");
  Stmt unrolled = unroll_loops(s);
  CHECK(to_string(unrolled) == "for s in serial(0, N):\n"
                               "  buf[0*2 + s] = x\n"
                               "for s in serial(0, N):\n"
                               "  buf[1*2 + s] = x\n"
                               "for s in serial(0, N):\n"
                               "  buf[2*2 + s] = x\n");
  CHECK(to_string(simplify(unrolled)) == "for s in serial(0, N):\n"
                                         "  buf[s] = x\n"
                                         "for s in serial(0, N):\n"
                                         "  buf[s + 2] = x\n"
                                         "for s in serial(0, N):\n"
                                         "  buf[s + 4] = x\n");
}

TEST_CASE("unroll_loops starts from the loop's min and leaves other loops alone") {
  Stmt s = For::make("r", 2, 2, ForKind::Unrolled, Store::make("buf", {int_var("r")}, 1.0f));
  CHECK(to_string(unroll_loops(s)) == "buf[2] = 1.0f\nbuf[3] = 1.0f\n");
  Stmt serial = For::make("r", 0, 2, ForKind::Serial, Store::make("buf", {int_var("r")}, 1.0f));
  CHECK(to_string(unroll_loops(serial)) == to_string(serial));
}

// -------------------------------------------------------- flatten_storage

TEST_CASE("flatten_storage makes row-major flat indices for allocations and arguments") {
  Expr i = int_var("i"), j = int_var("j"), x = float_var("x");
  Stmt s = Allocate::make("tmp", Float(32), MemoryType::Register, {4, 8},
                          Block::make({Store::make("tmp", {i, j}, x),
                                       Store::make("out", {i, j}, Load::make(Float(32), "tmp", {i, j}))}));
  std::vector<Argument> args{
      Argument{"out", Argument::Kind::Buffer, Float(32), {Param("M"), Param("N")}, true, {}},
      Argument{"M", Argument::Kind::Scalar, Int(32), {}, false, {}},
  };
  CHECK(to_string(s) == "allocate tmp[4][8] f32 in register\n"
                        "tmp[i, j] = x\n"
                        "out[i, j] = tmp[i, j]\n");
  Stmt flat = flatten_storage(s, args);
  CHECK(to_string(flat) == "allocate tmp[1*4*8] f32 in register\n"
                           "tmp[i*8 + j] = x\n"
                           "out[i*N + j] = tmp[i*8 + j]\n");
  CHECK(to_string(simplify(flat)) == "allocate tmp[32] f32 in register\n"
                                     "tmp[i*8 + j] = x\n"
                                     "out[i*N + j] = tmp[i*8 + j]\n");
}

TEST_CASE("flatten_storage uses the innermost allocation of a name") {
  Expr i = int_var("i"), j = int_var("j");
  Stmt inner = Allocate::make("t", Float(32), MemoryType::Register, {2, 3}, Store::make("t", {i, j}, 1.0f));
  Stmt s = Allocate::make("t", Float(32), MemoryType::Register, {5, 7},
                          Block::make({inner, Store::make("t", {i, j}, 2.0f)}));
  CHECK(to_string(simplify(flatten_storage(s, {}))) == "allocate t[35] f32 in register\n"
                                                        "allocate t[6] f32 in register\n"
                                                        "t[i*3 + j] = 1.0f\n"
                                                        "t[i*7 + j] = 2.0f\n");
}

// --------------------------------------------------- strip_stage_prefixes

TEST_CASE("strip_stage_prefixes restores the names the user wrote") {
  Stmt s = For::make("out.s0.i", 0, int_var("M"), ForKind::Serial,
                     LetStmt::make("out.s0.j", int_var("out.s0.i") + 1,
                                   Store::make("out", {int_var("out.s0.i"), int_var("out.s0.j")}, 1.0f)));
  CHECK(to_string(s) == "for out.s0.i in serial(0, M):\n"
                        "  let out.s0.j = out.s0.i + 1\n"
                        "  out[out.s0.i, out.s0.j] = 1.0f\n");
  CHECK(to_string(strip_stage_prefixes(s)) == "for i in serial(0, M):\n"
                                              "  let j = i + 1\n"
                                              "  out[i, j] = 1.0f\n");
}

TEST_CASE("strip_stage_prefixes keeps the qualifier where a short name would shadow another") {
  Expr x = float_var("x");
  Stmt s = For::make("acc.s0.ri", 0, 4, ForKind::Serial,
                     For::make("out.s0.ri", 0, 4, ForKind::Serial,
                               Store::make("o", {int_var("acc.s0.ri"), int_var("out.s0.ri")}, x)));
  CHECK(to_string(strip_stage_prefixes(s)) == "for ri in serial(0, 4):\n"
                                              "  for out_s0_ri in serial(0, 4):\n"
                                              "    o[ri, out_s0_ri] = x\n");
  // Disjoint scopes may both use the short name.
  Stmt disjoint = Block::make({
      For::make("acc.s0.ri", 0, 4, ForKind::Serial, Store::make("o", {int_var("acc.s0.ri")}, x)),
      For::make("out.s0.ri", 0, 4, ForKind::Serial, Store::make("p", {int_var("out.s0.ri")}, x)),
  });
  CHECK(to_string(strip_stage_prefixes(disjoint)) == "for ri in serial(0, 4):\n"
                                                     "  o[ri] = x\n"
                                                     "for ri in serial(0, 4):\n"
                                                     "  p[ri] = x\n");
}

// ------------------------------------------------------ clamp_input_loads

TEST_CASE("clamp_input_loads turns input calls into clamped loads") {
  Param M("M"), K("K");
  Input A("A", Float(32), {M, K});
  Expr i = int_var("i");
  Stmt s = For::make("i", 0, M, ForKind::Serial, Store::make("o", {i}, A(i, i - 1) + A(i, 0)));
  CHECK(to_string(s) == "for i in serial(0, M):\n"
                        "  o[i] = A(i, i - 1) + A(i, 0)\n");
  // i >= 0 needs only the upper clamp; i - 1 may be negative.
  CHECK(to_string(clamp_input_loads(s)) == "for i in serial(0, M):\n"
                                           "  o[i] = A[min(i, M - 1), max(min(i - 1, K - 1), 0)] + "
                                           "A[min(i, M - 1), min(0, K - 1)]\n");
}

TEST_CASE("clamp_input_loads clamps both ends of a coordinate it knows nothing about") {
  Param M("M");
  Input v("v", Float(32), {M});
  Stmt s = Store::make("o", {0}, v(int_var("free")));
  CHECK(to_string(clamp_input_loads(s)) == "o[0] = v[max(min(free, M - 1), 0)]\n");
}

// ------------------------------------------------- stage_inputs_in_shared

TEST_CASE("stage_inputs_in_shared copies the tile, fences it with two barriers and reads from it") {
  Gemm unstaged, staged;
  unstaged.fused(false, false);
  staged.fused(true, false);
  std::vector<Line> before = lines_of(to_string(lower_loop_nest(unstaged.out)));
  std::vector<Line> after = lines_of(to_string(lower_loop_nest(staged.out)));

  // Before: the update reads A directly; no shared memory, no barrier.
  size_t update = find_line(before, "acc[ti, tj, ri, rj] = acc[ti, tj, ri, rj] +");
  REQUIRE(update < before.size());
  CHECK(reads(before[update].text, "A"));
  CHECK(count_lines(before, "barrier") == 0);
  CHECK(count_lines(before, "allocate A_shared") == 0);

  // After: A_shared is allocated outside the reduction loop ...
  size_t allocation = find_line(after, "allocate A_shared[64][8] f32 in shared");
  // (the full steps of ko; the partial last step is a second loop)
  size_t ko = find_line(after, "for ko in serial(0, K/8):  # reduction of acc");
  REQUIRE(allocation < after.size());
  REQUIRE(ko < after.size());
  CHECK(allocation < ko);
  std::vector<Line> body = body_of(after, ko);
  // ... and each step copies the tile with every thread, between two barriers.
  REQUIRE(body.size() > 4);
  CHECK(body[0].text == "for ti in gpu_thread.y(0, 16):");
  CHECK(body[1].text == "for tj in gpu_thread.x(0, 16):");
  CHECK(body[2].text == "for e in unrolled(0, 2):");
  CHECK(body[3].text == "let flat = e*256 + ti*16 + tj");
  CHECK(starts_with(body[4].text, "A_shared[flat/8, flat % 8] = A[min(bi*64 + flat/8, M - 1)"));
  CHECK(count_lines(body, "barrier") == 2);
  size_t first_barrier = find_line(body, "barrier");
  CHECK(body[first_barrier].indent == body[0].indent);
  CHECK(body.back().text == "barrier");
  // The update reads the tile, not A.
  size_t read = find_line(body, "acc[ti, tj, ri, rj] = acc[ti, tj, ri, rj] +");
  REQUIRE(read < body.size());
  CHECK(read > first_barrier);
  CHECK(reads(body[read].text, "A_shared"));
  CHECK_FALSE(reads(body[read].text, "A"));
  CHECK(body[read].text.find("A_shared[ti*4 + ri, ki]") != std::string::npos);
  CHECK(reads(body[read].text, "B")); // B is not staged
}

TEST_CASE("stage_inputs_in_shared stages two inputs at one loop") {
  Gemm g;
  g.fused(true, true);
  std::vector<Line> nest = lines_of(to_string(lower_loop_nest(g.out)));
  size_t ko = find_line(nest, "for ko in");
  REQUIRE(ko < nest.size());
  std::vector<Line> body = body_of(nest, ko);
  CHECK(count_lines(nest, "allocate A_shared[64][8] f32 in shared") == 1);
  CHECK(count_lines(nest, "allocate B_shared[8][64] f32 in shared") == 1);
  CHECK(count_lines(body, "barrier") == 2); // one pair of barriers for both copies
  CHECK(body.back().text == "barrier");
  size_t read = find_line(body, "acc[ti, tj, ri, rj] = acc[ti, tj, ri, rj] +");
  REQUIRE(read < body.size());
  CHECK(body[read].text == "acc[ti, tj, ri, rj] = acc[ti, tj, ri, rj] + A_shared[ti*4 + ri, ki]*B_shared[ki, tj*4 + rj]");
}

TEST_CASE("stage_inputs_in_shared marks what it makes: the copies' loops by role, the tiles by their Input") {
  Gemm g;
  g.fused(true, true);
  // Walks the nest, checking that the staged buffers (staged_input set) are
  // written only inside StagingCopy loops, and StagingCopy loops write only
  // staged buffers.
  class Marks : public IRVisitor {
  public:
    std::map<std::string, std::string> staged_from; // buffer -> its Input
    int copy_loops = 0, copy_depth = 0, stores_in_copies = 0, misplaced = 0;
    using IRVisitor::visit;
    void visit(const Allocate *op) override {
      staged_from[op->name] = op->staged_input;
      IRVisitor::visit(op);
    }
    void visit(const For *op) override {
      bool copy = op->role == LoopRole::StagingCopy;
      copy_loops += copy;
      copy_depth += copy;
      IRVisitor::visit(op);
      copy_depth -= copy;
    }
    void visit(const Store *op) override {
      bool staged = !staged_from[op->buffer].empty();
      stores_in_copies += copy_depth > 0;
      misplaced += staged != (copy_depth > 0);
      IRVisitor::visit(op);
    }
  } marks;
  Stmt nest = lower_loop_nest(g.out);
  marks.visit_stmt(nest);
  CHECK(marks.staged_from["A_shared"] == "A");
  CHECK(marks.staged_from["B_shared"] == "B");
  CHECK(marks.staged_from["acc"].empty());
  CHECK(marks.copy_loops >= 6); // ti, tj and e for each of the two copies
  CHECK(marks.stores_in_copies >= 2);
  CHECK(marks.misplaced == 0);
  // A pass that rebuilds the nodes keeps the marks.
  Marks renamed;
  renamed.visit_stmt(strip_stage_prefixes(nest));
  CHECK(renamed.copy_loops == marks.copy_loops);
  CHECK(renamed.staged_from["A_shared"] == "A");
}

TEST_CASE("lower_tma_pipelines builds the TMA's pipeline of every loop staging left to it") {
  // stage_inputs_in_shared leaves a loop staged with TmaCopies as a
  // TmaStaging statement (the loop, its cp.async pipeline); the next pass
  // replaces each with mbarriers, tensor copies and the cp.async branch. None
  // may survive lowering, whatever the pipeline's variant.
  struct Count : IRVisitor {
    int marks = 0, tensor_copies = 0, waits = 0, producer_loops = 0;
    using IRVisitor::visit;
    void visit(const TmaStaging *op) override {
      ++marks;
      IRVisitor::visit(op);
    }
    void visit(const ProducerBoundary *op) override {
      ++marks; // reallocate_registers replaces every one
      IRVisitor::visit(op);
    }
    void visit(const PipelinedStaging *op) override {
      ++marks; // pipeline_staged_copies replaces every one
      IRVisitor::visit(op);
    }
    void visit(const TensorCopy *op) override {
      ++tensor_copies;
      IRVisitor::visit(op);
    }
    void visit(const For *op) override {
      producer_loops += op->role == LoopRole::ProducerWarps;
      IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
      waits += op->intrinsic == Intrinsic::MbarrierWait;
      IRVisitor::visit(op);
    }
  };
  using coalesce::testing::bf16_scheduled;
  MmaTiling first_thread = coalesce::testing::one_tile_tma_tiling(MmaKind::BF16_wgmma_m64k16);
  MmaTiling producers = coalesce::testing::wide_producer_tiling(MmaKind::BF16_wgmma_m64k16);
  MmaTiling across_tiles = producers;
  across_tiles.persistent_blocks = 132;
  MmaTiling cp_async = first_thread;
  cp_async.tma = false;
  for (const auto &[name, tiling, producer] : std::vector<std::tuple<std::string, MmaTiling, bool>>{
           {"the first thread's copies", first_thread, false},
           {"producer warps", producers, true},
           {"producer warps across a persistent block's tiles", across_tiles, true}}) {
    CAPTURE(name);
    Count count;
    count.visit_stmt(lower_loop_nest(bf16_scheduled(tiling).out));
    CHECK(count.marks == 0);
    CHECK(count.tensor_copies > 0);
    CHECK(count.waits > 0);
    CHECK((count.producer_loops > 0) == producer);
  }
  // Without TmaCopies staging leaves no mark, and the pass changes nothing.
  Count plain;
  plain.visit_stmt(lower_loop_nest(bf16_scheduled(cp_async).out));
  CHECK(plain.marks == 0);
  CHECK(plain.tensor_copies == 0);
  CHECK(plain.waits == 0);
  // The mark prints both of its parts.
  Stmt loop = For::make("ko", 0, 4, ForKind::Serial, Evaluate::make(0));
  std::string printed = to_string(TmaStaging::make(loop, Barrier::make()));
  CHECK(printed.find("tma_staging (for lower_tma_pipelines) of:") != std::string::npos);
  CHECK(printed.find("for ko in serial(0, 4):") != std::string::npos);
  CHECK(printed.find("its cp.async pipeline:") != std::string::npos);
  CHECK(to_string(PipelinedStaging::make(loop)).find("pipelined_staging (for pipeline_staged_copies) of:\n  for ko") !=
        std::string::npos);
}

TEST_CASE("stage_inputs_in_shared stages one buffer itself and leaves every pipeline to pipeline_staged_copies") {
  // One buffer: copy, barrier, read, barrier, in the loop. Two buffers or
  // cp.async slots: the first tiles copied before the loop, the next ones
  // during it. No PipelinedStaging mark survives lowering.
  struct Count : IRVisitor {
    int marks = 0, async_waits = 0, barriers_in_ko = 0, ko_loops = 0;
    bool in_ko = false;
    using IRVisitor::visit;
    void visit(const PipelinedStaging *op) override {
      ++marks;
      IRVisitor::visit(op);
    }
    void visit(const For *op) override {
      bool outer = in_ko;
      bool ko = op->name == "ko" || op->name.find(".ko") != std::string::npos;
      ko_loops += ko && !outer;
      in_ko |= ko;
      IRVisitor::visit(op);
      in_ko = outer;
    }
    void visit(const Barrier *) override { barriers_in_ko += in_ko; }
    void visit(const Call *op) override {
      async_waits += op->intrinsic == Intrinsic::AsyncWaitGroup || op->intrinsic == Intrinsic::AsyncWait;
      IRVisitor::visit(op);
    }
  };
  auto staged = [](bool two_buffers) {
    Gemm g;
    g.fused(false, false);
    TileCopies copies = two_buffers ? TileCopies(AsyncCopies{2}) : TileCopies(OneBuffer{});
    g.acc.update().stage_in_shared(g.A, g.ko, {}, copies).stage_in_shared(g.B, g.ko, {}, copies);
    Count count;
    count.visit_stmt(lower_loop_nest(g.out));
    return count;
  };
  Count one = staged(false), two = staged(true);
  CHECK(one.marks == 0);
  CHECK(two.marks == 0);
  // (The k loop runs as a whole-tile loop and a ragged tail, each staged.)
  REQUIRE(one.ko_loops > 0);
  CHECK(one.barriers_in_ko == 2 * one.ko_loops); // before and after the reads
  CHECK(two.barriers_in_ko == two.ko_loops);     // one per step
  CHECK(two.async_waits > 0);
}

// ------------------------------------------------- reallocate_registers

namespace {

// A role's thread loops around an empty body, as lower_tma_pipelines makes
// them: `rows` steps of y from `first_row` (8 x 32 threads for the MMA
// warps, 4 x 32 past them for the producers').
Stmt role_loops(const std::string &role, int first_row, int rows, LoopRole loop_role) {
  Stmt x = For::make(role + ".tx", 0, 32, ForKind::GpuThread, Block::make(std::vector<Stmt>{}), 0, {},
                     LoopRole::StagingCopy);
  return For::make(role + ".ty", first_row, rows, ForKind::GpuThread, x, 1, {}, loop_role);
}

Stmt boundary(ProducerPoint point, int registers) {
  return ProducerBoundary::make(point, role_loops("producers", 8, 4, LoopRole::ProducerWarps),
                                role_loops("consumers", 0, 8, LoopRole::StagingCopy), registers, "'acc' (update 0)",
                                "out.s0.ko");
}

Stmt work(const std::string &name) { return Store::make(name, {Expr(0)}, Expr(1.0f)); }

} // namespace

TEST_CASE("reallocate_registers hands the producers' registers over where lower_tma_pipelines marked their program") {
  // One block of 256 MMA threads and 128 producer threads, one block per
  // SM: the launch gives 168 registers per thread; the producers keep 40,
  // and the MMA warps take (168 * 384 - 40 * 128) / 256, down to 232.
  auto g = coalesce::testing::bf16_scheduled(coalesce::testing::wide_producer_tiling(MmaKind::BF16_wgmma_m64k16));
  Environment env = make_environment(g.out);
  auto pipeline = [](int registers) {
    return Block::make({work("init"), Barrier::make(), boundary(ProducerPoint::Start, registers), work("steps"),
                        boundary(ProducerPoint::Leave, registers), Barrier::make(), work("inval"), Barrier::make()});
  };
  std::string reallocated = to_string(reallocate_registers(pipeline(40), env));
  CAPTURE(reallocated);
  CHECK_HAS(reallocated, "registers_decrease(40)");
  CHECK_HAS(reallocated, "registers_increase(232)");
  CHECK_HAS(reallocated, "thread_exit()");
  CHECK(reallocated.find("producer_warps_") == std::string::npos);
  // The barrier before the producers leave is the whole block's; the two
  // after it count the MMA warps alone.
  CHECK(coalesce::testing::occurrences(reallocated, "barrier (the first 256 threads)") == 2);
  CHECK(coalesce::testing::occurrences(reallocated, "barrier\n") +
            coalesce::testing::occurrences(reallocated, "barrier (") ==
        3);
  // The decrease runs on the producers' threads, the increase on the MMA
  // warps'.
  CHECK(reallocated.find("producers.ty in gpu_thread.y(8, 4)") < reallocated.find("registers_decrease(40)"));
  CHECK(reallocated.find("consumers.ty in gpu_thread.y(0, 8)") < reallocated.find("registers_increase(232)"));

  // Where the producers have nothing to do, they give the registers back
  // and leave at once; every barrier after that counts the MMA warps.
  std::string idle = to_string(reallocate_registers(
      Block::make({boundary(ProducerPoint::Idle, 40), Barrier::make(), work("fallback"), Barrier::make()}), env));
  CAPTURE(idle);
  CHECK(idle.find("registers_decrease(40)") < idle.find("thread_exit()"));
  CHECK_HAS(idle, "registers_increase(232)");
  CHECK(coalesce::testing::occurrences(idle, "barrier (the first 256 threads)") == 2);

  // Without reallocation the marks go and nothing else changes.
  std::string plain = to_string(reallocate_registers(pipeline(0), env));
  CHECK(plain == to_string(Block::make(
                     {work("init"), Barrier::make(), work("steps"), Barrier::make(), work("inval"), Barrier::make()})));

  // Producers that would leave inside a persistent block's tile loop: the
  // next tile needs them.
  Stmt in_tiles = For::make("tile", 0, 4, ForKind::Serial, pipeline(40), -1, {}, LoopRole::PersistentTiles);
  CHECK_HAS(coalesce::testing::user_error_of([&] { reallocate_registers(in_tiles, env); }),
            "in schedule for 'acc' (update 0): the TMA copies staged at 'ko' reallocate registers "
            "(ProducerWarps::registers), so the producer warps leave the kernel after their copies, but on this "
            "persistent grid");

  // The mark prints what it stands for.
  std::string printed = to_string(boundary(ProducerPoint::Start, 40));
  CHECK_HAS(printed, "producer_warps_start (for reallocate_registers: keep 40 registers)");
}

// ------------------------------------------------- fuse_gpu_thread_loops

TEST_CASE("fuse_gpu_thread_loops makes one kernel with thread indices and per-thread registers") {
  Gemm g;
  g.fused(true, true);
  std::string before = to_string(lower_loop_nest(g.out));
  CHECK(before.find("allocate acc[16][16][4][4] f32 in register") != std::string::npos);
  CHECK(before.find("for ti in gpu_thread.y(0, 16):") != std::string::npos);

  GpuProgram program = lower_for_gpu(g.out);
  REQUIRE(program.kernels.size() == 1);
  const GpuKernel &kernel = program.kernels[0];
  CHECK(kernel.name == "out");
  CHECK(to_string(kernel.grid[0]) == "ceil(N/64)");
  CHECK(to_string(kernel.grid[1]) == "ceil(M/64)");
  CHECK(to_string(kernel.grid[2]) == "1");
  CHECK(kernel.block == std::array<int, 3>{{16, 16, 1}});
  CHECK(kernel.threads() == 256);
  CHECK(kernel.shared_bytes == 2 * 64 * 8 * 4);

  std::string after = to_string(kernel.body);
  std::vector<Line> lines = lines_of(after);
  CHECK(after.find("gpu_thread") == std::string::npos);
  CHECK(after.find("gpu_block") == std::string::npos);
  CHECK(lines[0].text == "let bi = block_id.y()");
  CHECK(lines[1].text == "let bj = block_id.x()");
  CHECK(count_lines(lines, "allocate acc[16] f32 in register") == 1);
  CHECK(count_lines(lines, "allocate acc[") == 1);
  CHECK(count_lines(lines, "let ti = thread_id.y()") >= 3);
  CHECK(count_lines(lines, "let tj = thread_id.x()") >= 3);
  // Each thread indexes its registers by constants only (unrolled).
  CHECK(count_lines(lines, "acc[0] = 0.0f") == 1);
  CHECK(count_lines(lines, "acc[15] = 0.0f") == 1);
  CHECK(after.find("acc[ti") == std::string::npos);
  CHECK(count_lines(lines, "barrier") >= 2);
  // The program's arguments: inputs by name, the output, then the params.
  std::vector<std::string> names;
  for (const Argument &arg : program.args)
    names.push_back(arg.name);
  CHECK(names == std::vector<std::string>{"A", "B", "bias", "out", "K", "M", "N"});
}

TEST_CASE("fuse_gpu_thread_loops keeps block loops out of the body and rejects a thread-free store") {
  Gemm g;
  g.out.tile(g.i, g.j, g.bi, g.bj, g.ii, g.jj, 8, 8).gpu_blocks({g.bi, g.bj}).gpu_threads({g.ii, g.jj});
  g.out.fuse_epilogue(g.acc, g.bj);
  GpuProgram program = lower_for_gpu(g.out);
  REQUIRE(program.kernels.size() == 1);
  CHECK(program.kernels[0].block == std::array<int, 3>{{8, 8, 1}});
  CHECK(program.kernels[0].shared_bytes == 0);
  CHECK(to_string(program.kernels[0].grid[0]) == "ceil(N/8)");
  // acc: one element per thread.
  CHECK(to_string(program.kernels[0].body).find("allocate acc[1] f32 in register") != std::string::npos);
}

// ----------------------------------------------------- build_loop_nest

TEST_CASE("build_loop_nest puts the reduction's tail guard outside the register block loops") {
  Gemm g;
  g.fused(false, false);
  std::vector<Line> nest = lines_of(to_string(lower_loop_nest(g.out)));
  // The full steps of ko run unguarded; only the partial last step checks k.
  size_t full = find_line(nest, "for ko in serial(0, K/8):  # reduction of acc");
  size_t tail = find_line(nest, "for ko in serial(K/8, ceil(K/8) - K/8):  # reduction of acc");
  REQUIRE(full < nest.size());
  REQUIRE(tail < nest.size());
  CHECK(count_lines(body_of(nest, full), "if ") == 0);
  CHECK(count_lines(nest, "if k < K:") == 1);
  size_t guard = find_line(nest, "if k < K:");
  CHECK(guard > tail);
  REQUIRE(guard + 1 < nest.size());
  CHECK(nest[guard - 1].text == "let k = ko*8 + ki");
  CHECK(nest[guard + 1].text == "for ri in unrolled(0, 4):");
  CHECK(nest[guard + 1].indent == nest[guard].indent + 1);
  std::vector<Line> guarded = body_of(nest, guard);
  CHECK(count_lines(guarded, "for rj in unrolled(0, 4):") == 1);
  CHECK(count_lines(guarded, "acc[ti, tj, ri, rj] = acc[ti, tj, ri, rj] + ") == 1);
  // Inside the ki loop, which is inside ko.
  std::vector<Line> outer = enclosing(nest, guard);
  REQUIRE(outer.size() >= 2);
  CHECK(outer[0].text == "for ki in unrolled(0, 8):  # reduction of acc");
}

TEST_CASE("build_loop_nest guards the output store by both ragged extents") {
  Gemm g;
  g.fused(false, false);
  // One copy of the store: the unguarded one for whole tiles is
  // test_partition_full_tiles's.
  g.out.partition_full_tiles(false);
  std::vector<Line> nest = lines_of(to_string(lower_loop_nest(g.out)));
  size_t store = find_line(nest, "out[i, j] = ");
  REQUIRE(store < nest.size());
  std::vector<std::string> guards;
  for (const Line &line : enclosing(nest, store))
    if (starts_with(line.text, "if "))
      guards.push_back(line.text);
  CHECK(guards == std::vector<std::string>{"if j < N:", "if i < M:"});
  CHECK(count_lines(nest, "if i < M:") == 1);
  CHECK(count_lines(nest, "if j < N:") == 1);
}

// An M x 128 x K GEMM with constant extents: 16 x 32 tiles, K split by 8.
std::string constant_shape_nest(int M, int K) {
  Input A("A", Float(32), {M, K}), B("B", Float(32), {K, 128});
  Var i("i"), j("j"), bi("bi"), bj("bj"), ti("ti"), tj("tj");
  RDom k(0, K, "k");
  RVar ko("ko"), ki("ki");
  Func acc("acc"), out("out");
  acc(i, j) = 0.0f;
  acc(i, j) += A(i, k) * B(k, j);
  out(i, j) = relu(acc(i, j));
  out.tile(i, j, bi, bj, ti, tj, 16, 32).gpu_blocks({bi, bj}).gpu_threads({ti, tj});
  out.fuse_epilogue(acc, bj);
  acc.update().split(k, ko, ki, 8);
  return to_string(lower_loop_nest(out));
}

TEST_CASE("build_loop_nest leaves out guards where constant extents divide") {
  std::string nest = constant_shape_nest(64, 32);
  CHECK(nest.find("if ") == std::string::npos);
  CHECK(nest.find("for bi in gpu_block.y(0, 4):") != std::string::npos);
  CHECK(nest.find("for bj in gpu_block.x(0, 4):") != std::string::npos);
  CHECK(nest.find("for ko in serial(0, 4):  # reduction of acc") != std::string::npos);
}

TEST_CASE("build_loop_nest guards a constant extent that does not divide") {
  std::vector<Line> nest = lines_of(constant_shape_nest(60, 30));
  CHECK(count_lines(nest, "if i < 60:") == 1);
  CHECK(count_lines(nest, "if k < 30:") == 1);
  CHECK(count_lines(nest, "if j < ") == 0); // 128 = 4 * 32
  CHECK(count_lines(nest, "for bi in gpu_block.y(0, 4):") == 1);
}

TEST_CASE("the fused nest stores out only outside every reduction loop of acc") {
  Gemm g;
  g.fused(true, true);
  std::vector<Line> nest = lines_of(to_string(lower_loop_nest(g.out)));
  size_t out_stores = 0, acc_updates = 0;
  for (size_t n = 0; n < nest.size(); ++n) {
    bool in_reduction = false;
    for (const Line &line : enclosing(nest, n))
      in_reduction |= starts_with(line.text, "for ") &&
                      line.text.find("# reduction of acc") != std::string::npos;
    if (starts_with(nest[n].text, "out[")) {
      ++out_stores;
      CHECK_MESSAGE(!in_reduction, "store to out inside a reduction loop: " << nest[n].text);
    }
    if (starts_with(nest[n].text, "acc[") && nest[n].text.find("= acc[") != std::string::npos) {
      ++acc_updates;
      CHECK(in_reduction); // the parse does see reduction loops
    }
  }
  CHECK(out_stores == 2);  // for whole tiles (partition_full_tiles) and the guarded one
  CHECK(acc_updates == 2); // the full steps of ko, then the partial one
}

TEST_CASE("lower_for_host leaves no unrolled loop and indexes flat") {
  Gemm g;
  g.fused(true, true);
  LoweredFunc host = lower_for_host(g.out);
  std::string body = to_string(host.body);
  CHECK(body.find("unrolled") == std::string::npos);
  CHECK(body.find("for ko in serial(0, K/8):  # reduction of acc") != std::string::npos);
  CHECK(body.find("allocate acc[4096] f32 in register") != std::string::npos);
  CHECK(body.find("acc[ti, tj") == std::string::npos);
}
