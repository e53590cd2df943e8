// Lesson 2: tiling the output onto GPU blocks and threads.
//
// tile() splits i and j into a block index and an index within the block;
// gpu_blocks and gpu_threads map those loops onto the GPU's grid. Until the
// very last step of lowering the nest keeps serial semantics: on the CPU the
// block and thread loops are ordinary loops, so the same schedule runs and is
// checked here, without a GPU.
//
// Two ways to place the reduction acc on a 16x16 tile of out:
//   naive_gpu: at the innermost thread loop, so each thread computes its own
//              element's whole sum, then the epilogue;
//   tiled:     at the block (bj), with k reordered outside the thread loops,
//              so all threads of a block take step k together. This is the
//              shape that lets a block share the data of step k (lesson 4).
// Both run the epilogue (bias + GELU) after their element's sum is complete.

#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

int main() {
  return run_lesson([] {
    bool ok = true;
    {
      Gemm g = make_gemm(Epilogue::BiasGelu);
      Var bi("bi"), bj("bj"), ti("ti"), tj("tj");
      g.out.tile(g.i, g.j, bi, bj, ti, tj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ti, tj});
      g.acc.compute_at(g.out, tj); // inside the thread: one element's full sum
      Pipeline pipeline(g.out);
      print_loop_nest("naive_gpu: one thread per element", pipeline);
      ok &= matches_catalog("naive_gpu", pipeline) && check_on_cpu(pipeline, g.epilogue, 45, 37, 29);
    }
    {
      Gemm g = make_gemm(Epilogue::BiasGelu);
      Var bi("bi"), bj("bj"), ti("ti"), tj("tj");
      g.out.tile(g.i, g.j, bi, bj, ti, tj, 16, 16).gpu_blocks({bi, bj}).gpu_threads({ti, tj});
      // acc on out's whole tile, in registers (one element per thread once
      // the thread loops become the GPU's threads), then out after it.
      g.out.fuse_epilogue(g.acc, bj);
      g.acc.update().reorder({g.k, ti, tj}); // step k for the whole tile at once
      Pipeline pipeline(g.out);
      print_loop_nest("tiled: the tile's reduction, then its epilogue", pipeline);
      ok &= matches_catalog("tiled", pipeline) && check_on_cpu(pipeline, g.epilogue, 45, 37, 29);
    }
    return ok;
  });
}
