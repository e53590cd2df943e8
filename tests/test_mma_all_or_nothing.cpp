// fuse, mma_tile and mma are all or nothing, like every other primitive: a
// call that raises a UserError leaves every schedule exactly as it was (the
// recorded data compared field by field), and the Func still lowers and
// computes the reference afterwards. mma_tile splits the tile before it can
// meet a loop it cannot split, so without the restore it would leave half
// a layout behind.

#include "examples/Reference.h"
#include "ErrorCapture.h"
#include "ScheduleText.h"

#include <array>
#include <doctest/doctest.h>

using namespace coalesce;
using namespace coalesce::examples;
using testing::schedule_text;
using testing::user_error_of;

namespace {

// The loops of the tensor-core schedule (dsl/recipes/GemmMmaSchedule.cpp),
// built step by step so that a rejected call can sit between the steps.
struct MmaGemm {
  Gemm g = make_gemm(Epilogue::BiasGelu, BFloat(16), Float(32));
  Var bi{"bi"}, bj{"bj"}, ii{"ii"}, jj{"jj"}, warp{"warp"}, lane{"lane"}, mi{"mi"}, nj{"nj"}, fi{"fi"}, fj{"fj"};
  RVar ko{"ko"}, kk{"kk"};

  void tile() { g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64).gpu_blocks({bi, bj}); }
  void mma_tile() { g.out.mma_tile(ii, jj, MmaKind::BF16_m16n8k16, 32, 32, warp, lane, mi, nj, fi, fj); }
  void fuse_epilogue() { g.out.fuse_epilogue(g.acc, bj); }
  void mma() { g.acc.update().mma(g.k, ko, kk, 16); }
  void stage() {
    AsyncCopies copies; // double buffered, cp.async
    copies.zero_fill = true;
    g.acc.update().allow_reassociation().stage_in_shared(g.A, ko, {}, copies).stage_in_shared(g.B, ko, {}, copies);
  }
};

// The largest relative error from the reference over a few shapes, ragged
// ones included.
double worst_error(const Gemm &g) {
  Pipeline pipeline(g.out);
  double worst = 0;
  for (auto [M, N, K] : {std::array<int, 3>{1, 1, 1}, {70, 66, 40}, {64, 64, 33}}) {
    GemmData data = make_data(M, N, K, 5, g.in);
    Buffer out({M, N});
    out.poison();
    pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, g.epilogue), out);
    worst = std::max(worst, relative_error(out, reference(data, M, N, K, g.epilogue)));
  }
  return worst;
}

} // namespace

TEST_CASE("a rejected fuse leaves the schedule as it was") {
  MmaGemm s;
  s.tile();
  std::string before = schedule_text(s.g.out);
  // bi is not directly outside jj.
  std::string message = user_error_of([&] { s.g.out.fuse(s.jj, s.bi, Var("f")); });
  CHECK_HAS(message, "'bi' must be the loop directly outside 'jj'");
  // The fused loop takes a name the stage already has.
  message = user_error_of([&] { s.g.out.fuse(s.jj, s.ii, s.bj); });
  CHECK_HAS(message, "reuses the name 'bj'");
  CHECK(schedule_text(s.g.out) == before);

  s.mma_tile();
  s.fuse_epilogue();
  s.mma();
  s.stage();
  CHECK(worst_error(s.g) < 1e-5);
}

TEST_CASE("a rejected mma_tile leaves the schedule as it was, also when it fails after its first split") {
  {
    // jj is unrolled: mma_tile splits ii into warp rows, then cannot split jj.
    MmaGemm s;
    s.tile();
    s.g.out.unroll(s.jj);
    std::string before = schedule_text(s.g.out);
    std::string message = user_error_of([&] { s.mma_tile(); });
    CHECK_HAS(message, "split of 'jj', which is already marked");
    CHECK(schedule_text(s.g.out) == before);
    // The plain tiling that is left leaves acc at root, which would need a
    // GPU kernel of its own: the CPU run refuses it as the GPU path does,
    // rather than computing with a schedule the GPU cannot run.
    CHECK_HAS(user_error_of([&] { worst_error(s.g); }), "'acc' is computed at root");
  }
  MmaGemm s;
  s.tile();
  std::string before = schedule_text(s.g.out);
  std::string message = user_error_of(
      [&] { s.g.out.mma_tile(s.ii, s.jj, MmaKind::BF16_m16n8k16, 48, 32, s.warp, s.lane, s.mi, s.nj, s.fi, s.fj); });
  CHECK_HAS(message, "does not divide the 64 x 64 tile");
  CHECK(schedule_text(s.g.out) == before);
  s.mma_tile();
  s.fuse_epilogue();
  s.mma();
  s.stage();
  CHECK(worst_error(s.g) < 1e-5);
}

TEST_CASE("a rejected mma leaves the schedule as it was") {
  MmaGemm s;
  s.tile();
  s.mma_tile();
  s.fuse_epilogue();
  std::string acc_before = schedule_text(s.g.acc), out_before = schedule_text(s.g.out);
  std::string message = user_error_of([&] { s.g.acc.update().mma(s.g.k, s.ko, s.kk, 24); });
  CHECK_HAS(message, "needs a k step that is a positive multiple of 16");
  message = user_error_of([&] { s.g.acc.update().mma(s.g.k, RVar("warp"), s.kk, 16); });
  CHECK_HAS(message, "reuses the name 'warp'");
  message = user_error_of([&] { s.g.out.pure().mma(RVar("k"), s.ko, s.kk, 16); });
  CHECK_HAS(message, "apply it to the update");
  CHECK(schedule_text(s.g.acc) == acc_before);
  CHECK(schedule_text(s.g.out) == out_before);

  s.mma();
  s.stage();
  CHECK(worst_error(s.g) < 1e-5);
}
