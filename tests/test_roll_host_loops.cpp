// roll_large_unrolled_loops (scheduler/RollHostLoops.h): on the host, an
// unrolled nest that would make more than 16 copies runs as loops, the
// small unrolled loops inside it still unrolled; the CPU check computes the
// same bits as with every copy made, shown by two register tilings of one
// GEMM whose elements sum in the same order: 8 x 8 registers per thread
// (64 copies: rolled) and 4 x 4 (16: unrolled) give identical outputs.

#include "examples/Reference.h"
#include "dsl/recipes/GemmSchedule.h"
#include "dsl/IRPrinter.h"
#include "scheduler/RollHostLoops.h"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

Stmt unrolled(const std::string &name, int extent, Stmt body) {
  return For::make(name, 0, extent, ForKind::Unrolled, std::move(body));
}

Buffer run_tiled(int threads, const GemmData &data, int M, int N, int K) {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  GemmTiling t;
  t.block_m = t.block_n = 64;
  t.threads_m = t.threads_n = threads;
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  Pipeline pipeline(g.out);
  Buffer out({M, N});
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
  return out;
}

} // namespace

TEST_CASE("a large unrolled nest runs as a loop around its small unrolled loops; small nests stay unrolled") {
  Stmt store = Store::make("out", {Variable::make(Int(32), "nj") * 4 + Variable::make(Int(32), "fi") * 2 +
                                       Variable::make(Int(32), "fj")},
                           Expr(1.0f));
  Stmt fragments = unrolled("nj", 32, unrolled("fi", 2, unrolled("fj", 2, store)));
  std::string rolled = to_string(roll_large_unrolled_loops(fragments));
  CHECK(rolled.find("for nj in serial(0, 32)") != std::string::npos);
  CHECK(rolled.find("for fi in unrolled(0, 2)") != std::string::npos);
  CHECK(rolled.find("for fj in unrolled(0, 2)") != std::string::npos);
  // 4 x 4 = 16 copies: kept; beside a large nest, each decided alone.
  Stmt tile = unrolled("ii", 4, unrolled("ji", 4, store));
  std::string kept = to_string(roll_large_unrolled_loops(Block::make({tile, fragments})));
  CHECK(kept.find("for ii in unrolled(0, 4)") != std::string::npos);
  CHECK(kept.find("for ji in unrolled(0, 4)") != std::string::npos);
  CHECK(kept.find("for nj in serial(0, 32)") != std::string::npos);
  CHECK(to_string(roll_large_unrolled_loops(tile, 15)).find("for ii in serial(0, 4)") != std::string::npos);
}

TEST_CASE("rolled on the host, a register tile computes the same bits as an unrolled one") {
  for (auto [M, N, K] : {std::array<int, 3>{130, 70, 33}, std::array<int, 3>{64, 64, 1}}) {
    CAPTURE(M);
    CAPTURE(K);
    GemmData data = make_data(M, N, K, 5);
    Buffer rolled = run_tiled(8, data, M, N, K);    // 8 x 8 registers: 64 copies, rolled
    Buffer unrolled_tile = run_tiled(16, data, M, N, K); // 4 x 4: 16 copies, unrolled
    REQUIRE(rolled.values().size() == unrolled_tile.values().size());
    CHECK(std::memcmp(rolled.values().data(), unrolled_tile.values().data(), rolled.values().size() * sizeof(float)) ==
          0);
    CHECK(relative_error(rolled, reference(data, M, N, K, Epilogue::BiasGelu)) < 1e-5);
  }
}
