// Lesson 5: fusing the epilogue, and why it runs after the K loop.
//
// The unfused chain writes A*B to memory, then reads it back to add the bias
// and apply GELU. Fused, each thread applies bias + GELU to its 4x4 register
// block straight away, and A*B never leaves the registers. The schedule is
// lesson 4's; only the algorithm's last line changed:
//   out(i, j) = gelu(acc(i, j) + bias(j)).
//
// Where the epilogue runs is the whole point. GELU of a partial sum is not
// GELU of the sum, and a bias added on every K step is added K times. Both
// mistakes give finite numbers, and both agree with the right answer when
// K == 1, where the partial sum is the sum. So the printed nest puts the
// store to out after the loop over ko (marked "reduction of acc") has ended,
// and the check below runs the pair K = 1 and K = 3 against the unfused
// chain: a misplaced epilogue passes the first and fails the second.

#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// lesson 4's schedule
void schedule(Gemm &g) {
  Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
  RVar ko("ko"), ki("ki");
  g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64)
      .gpu_blocks({bi, bj})
      .register_block(ii, jj, ti, tj, ri, rj, 4, 4)
      .gpu_threads({ti, tj});
  // acc on out's tile, in registers: its whole reduction runs inside the
  // block, then out's thread loops run the epilogue on the finished sums.
  g.out.fuse_epilogue(g.acc, bj);
  g.acc.update()
      .split(g.k, ko, ki, 8)
      .reorder({ko, ti, tj, ki, ri, rj})
      .unroll(ki)
      .stage_in_shared(g.A, ko)
      .stage_in_shared(g.B, ko);
}

// The fused schedule against the unfused chain (A*B in float, stored, then
// bias + GELU) at K = 1 and K = 3, same M and N.
bool check_k1_k3(Pipeline &pipeline, Epilogue e) {
  bool ok = true;
  for (int K : {1, 3}) {
    GemmData data = make_data(67, 45, K, 7);
    ok &= check_against(pipeline, data, 67, 45, K, e, unfused_chain(data, 67, 45, K, e), "vs unfused chain");
  }
  return ok;
}

} // namespace

int main() {
  return run_lesson([] {
    bool ok = true;
    {
      Gemm g = make_gemm(Epilogue::BiasGelu);
      schedule(g);
      Pipeline pipeline(g.out);
      print_loop_nest("fused_gelu: GEMM + bias + GELU in one kernel", pipeline);
      ok &= matches_catalog("fused_gelu", pipeline);
      ok &= check_on_cpu(pipeline, g.epilogue, 70, 75, 21);
      ok &= check_k1_k3(pipeline, g.epilogue);
    }
    {
      // A variation: fold the bias into acc's initial value. acc starts from
      // bias(j) instead of 0, so the bias is still added exactly once, first
      // instead of last (a different rounding, hence an explicit request).
      Gemm g = make_gemm(Epilogue::BiasGelu);
      schedule(g);
      g.out.fold_bias_into_init();
      Pipeline pipeline(g.out);
      print_loop_nest("bias_folded: acc starts from the bias", pipeline);
      ok &= matches_catalog("bias_folded", pipeline);
      ok &= check_on_cpu(pipeline, g.epilogue, 70, 75, 21);
      ok &= check_k1_k3(pipeline, g.epilogue);
    }
    return ok;
  });
}
