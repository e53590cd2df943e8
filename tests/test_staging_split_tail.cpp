// stage_in_shared at a loop whose body splits a loop by a factor that does
// not divide it (ki of 8 split by 3): the split runs as a main loop (kio in
// [0, 2)) and a tail (kio in [2, 3), guarded ki < 8) with the same names,
// each reading the staged input. The tile spans what either reads (its
// k extent 9, not the tail's 3), and the result is the unstaged one's, on
// the CPU at ragged shapes, for every kind of copy and with both inputs
// staged. Found by the schedule fuzzer: the tile was the tail's, and the
// main loop read it at negative offsets.

#include "examples/Gemm.h"
#include "examples/Reference.h"
#include "runtime/Coalesce.h"

#include "TextCount.h"

#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::examples;
using coalesce::testing::occurrences;

namespace {

// 8 x 32 tiles of 2 x 8 threads holding 4 x 4, K in steps of 8, the step's
// ki split by 3 after `copies` staged A (and B with `both`) at ko.
Gemm split_after_staging(const TileCopies &copies, bool both) {
  Gemm g = make_gemm(Epilogue::BiasGelu, Float(16), Float(32));
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RVar ko("ko"), ki("ki"), kio("kio"), kii("kii");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 8, 32).gpu_blocks({bi, bj});
  g.out.register_block(ii, jj, ti, tj, ri, rj, 4, 4).gpu_threads({ti, tj});
  g.out.fuse_epilogue(g.acc, bj);
  g.acc.update().split(g.k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj});
  g.acc.update().stage_in_shared(g.A, ko, SharedLayout{}, copies);
  if (both)
    g.acc.update().stage_in_shared(g.B, ko, SharedLayout{}, copies);
  g.acc.update().split(ki, kio, kii, 3);
  return g;
}

} // namespace

TEST_CASE("a tile staged around a split's main loop and tail spans both: the unstaged result") {
  for (TileCopies copies :
       {TileCopies(AsyncCopies{2, true}), TileCopies(OneBuffer{true}), TileCopies(RegisterDoubleBuffer{true})}) {
    for (bool both : {false, true}) {
      CAPTURE(both);
      Gemm g = split_after_staging(copies, both);
      Pipeline pipeline(g.out);
      std::string nest = pipeline.loop_nest();
      INFO(nest);
      CHECK(occurrences(nest, "allocate A_shared[") == 1);
      CHECK(nest.find("[8][9] f16 in shared") != std::string::npos); // A's 8 rows by ki 0..8
      for (auto [M, N, K] : std::vector<std::array<int, 3>>{{27, 12, 14}, {8, 32, 8}, {9, 33, 17}, {3, 5, 1}}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(K);
        GemmData data = make_data(M, N, K, 11, Float(16));
        Buffer out({M, N});
        out.poison();
        pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, Epilogue::BiasGelu), out);
        CHECK(relative_error(out, reference(data, M, N, K, Epilogue::BiasGelu)) < 1e-5);
      }
    }
  }
}
