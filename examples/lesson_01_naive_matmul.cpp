// Lesson 1: the algorithm, with no schedule.
//
// A Coalesce program says *what* to compute apart from *how*. This lesson
// writes only the what, a matrix product, and lets the defaults decide the
// how: every Func is computed in full, one after the other, in plain
// row-major loops. Every later lesson keeps this algorithm word for word and
// changes only the schedule, and the result stays the same.

#include "examples/LessonSupport.h"

using namespace coalesce;
using namespace coalesce::examples;

int main() {
  return run_lesson([] {
    // Shapes are parameters, known only when the pipeline runs.
    Param M("M"), N("N"), K("K");
    Input A("A", Float(32), {M, K}), B("B", Float(32), {K, N});
    Var i("i"), j("j");
    RDom k(0, K, "k"); // a reduction domain: k runs over [0, K)

    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;               // the pure definition: the initial value
    acc(i, j) += A(i, k) * B(k, j); // an update: the sum over k
    out(i, j) = acc(i, j);          // the output (later lessons put an epilogue here)

    // No schedule: acc, a reduction, is computed at root into a full M x N
    // buffer; out then reads it. Note the comment on the k loop: the printed
    // nest marks every reduction loop, which is where an epilogue must never go.
    Pipeline pipeline(out);
    print_loop_nest("no schedule", pipeline);

    // A ragged shape (no dimension a multiple of anything) is the honest test.
    return matches_catalog("naive", pipeline) && check_on_cpu(pipeline, Epilogue::None, 37, 23, 19);
  });
}
