// Lesson 3: register blocking.
//
// One element per thread reads a row of A and a column of B for one
// multiply-add each: the loads dominate. With a 4x4 block of outputs per
// thread, each step k loads 4 values of A and 4 of B and does 16
// multiply-adds. register_block(ii, jj, ti, tj, ri, rj, 4, 4) splits the
// tile's coordinates into a thread index (ti, tj) and a position in the
// thread's block (ri, rj), and unrolls ri and rj so that the 16 partial sums
// live in registers. A 64x64 block tile then needs only 16x16 threads.
//
// K is split by 8 (ko, ki) and ki unrolled; ko stays outside ki, so the sum
// is still taken in the algorithm's order (k = 0, 1, 2, ...) and the result
// is bit-for-bit the same as summing k in order. (Ordering ki outside ko
// would change the rounding; lesson 6 shows that being rejected.)

#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

int main() {
  return run_lesson([] {
    Gemm g = make_gemm(Epilogue::None);
    Var bi("bi"), bj("bj"), ii("ii"), jj("jj"), ti("ti"), tj("tj"), ri("ri"), rj("rj");
    RVar ko("ko"), ki("ki");
    g.out.tile(g.i, g.j, bi, bj, ii, jj, 64, 64)
        .gpu_blocks({bi, bj})
        .register_block(ii, jj, ti, tj, ri, rj, 4, 4)
        .gpu_threads({ti, tj});
    g.out.fuse_epilogue(g.acc, bj); // acc: a 4x4 register block per thread
    g.acc.update().split(g.k, ko, ki, 8).reorder({ko, ti, tj, ki, ri, rj}).unroll(ki);

    Pipeline pipeline(g.out);
    print_loop_nest("register_blocked: 64x64 tile, 16x16 threads, 4x4 per thread", pipeline);
    // 70 x 75 x 21: partial tiles in both dimensions and a partial K step.
    return matches_catalog("register_blocked", pipeline) && check_on_cpu(pipeline, g.epilogue, 70, 75, 21);
  });
}
