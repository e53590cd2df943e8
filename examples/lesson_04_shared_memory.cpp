// Lesson 4: staging A and B in shared memory.
//
// In lesson 3 every thread reads its 4 rows of A and 4 columns of B from
// global memory, and neighbouring threads read the same values again. With
// stage_in_shared(A, ko), the block copies the 64x8 tile of A that step ko
// needs into shared memory once, cooperatively (each thread copies a few
// elements, guarded at the matrix's edges), with a barrier before the
// threads read it and another before the next step overwrites it; the same
// for B's 8x64 tile. The arithmetic, and so the result, is unchanged: only
// where the operands are read from moves.

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
    g.out.fuse_epilogue(g.acc, bj);
    g.acc.update()
        .split(g.k, ko, ki, 8)
        .reorder({ko, ti, tj, ki, ri, rj})
        .unroll(ki)
        .stage_in_shared(g.A, ko) // A's 64x8 tile, once per K step
        .stage_in_shared(g.B, ko); // B's 8x64 tile

    Pipeline pipeline(g.out);
    print_loop_nest("shared_staged: A and B tiles in shared memory per K step", pipeline);
    return matches_catalog("shared_staged", pipeline) && check_on_cpu(pipeline, g.epilogue, 70, 75, 21);
  });
}
