#include "bench/gpu_check/LayoutMatrixCheck.h"

#include "bench/gpu_check/LayoutMatrixGemm.h"
#include "bench/gpu_check/Report.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using namespace layout_matrix;

struct Shape {
  int M, N, K;
  int batch = 1; ///< products, where the layouts are batched
  std::string str() const {
    return (batch > 1 ? std::to_string(batch) + "x" : std::string()) + std::to_string(M) + "x" + std::to_string(N) +
           "x" + std::to_string(K);
  }
};

std::string layout_name(const Layout &layout) {
  return std::string(layout.batched ? "batched, " : "") + "A " + (layout.a_km ? "K x M" : "M x K") + ", B " +
         (layout.b_nk ? "N x K" : "K x N") + ", " + out_name(layout.out);
}

// The paths this GPU has: FFMA and the warp MMA, and the warpgroup MMA's on
// sm_90a.
std::vector<Path> device_paths() {
  std::vector<Path> paths;
  for (Path p : kPaths) {
    const bool warpgroup = p != Path::Ffma && p != Path::WarpMma;
    if (!warpgroup || target_for_current_device().has_warpgroup_mma())
      paths.push_back(p);
  }
  return paths;
}

// `layouts` (all batched, or none) on `path` at `s`, each against the dense
// layouts on the GPU.
void check_path(Path path, const Shape &s, const std::vector<Layout> &layouts, const std::string &prefix) {
  const std::string shape = s.str();
  Layout dense;
  dense.batched = layouts.front().batched;
  auto dims = [&](int rows, int columns) {
    return dense.batched ? std::vector<int>{s.batch, rows, columns} : std::vector<int>{rows, columns};
  };
  Buffer a(dims(s.M, s.K), input_type(path)), b(dims(s.K, s.N), input_type(path)), bias({s.N});
  a.fill_random(91);
  b.fill_random(92);
  bias.fill_random(93);
  Buffer want = output_buffer(path, dense, s.M, s.N, s.batch);
  want.poison();
  try {
    MatrixGemm g(path, dense);
    StoredInputs inputs(dense, a, b, s.M, s.N, s.K, s.batch);
    Pipeline(g.out).realize_on_gpu(layout_arguments(dense, inputs, bias, s.M, s.N, s.K, s.batch), want);
  } catch (const std::exception &error) {
    Outcome o;
    o.failure = std::string("the dense layouts: ") + error.what();
    record(prefix + path_name(path), shape, "dense layouts, bits", o);
    return;
  }
  for (const Layout &layout : layouts) {
    const std::string name = prefix + path_name(path) + ", " + layout_name(layout);
    Outcome o;
    try {
      MatrixGemm g(path, layout);
      StoredInputs inputs(layout, a, b, s.M, s.N, s.K, s.batch);
      Buffer got = output_buffer(path, layout, s.M, s.N, s.batch);
      Pipeline(g.out).realize_on_gpu(layout_arguments(layout, inputs, bias, s.M, s.N, s.K, s.batch), got);
      Comparison c = compare_with_dense(layout, got, want, s.M, s.N);
      o.not_finite = c.nan;
      o.error = double(c.differ + c.between_written) / double(got.size());
      o.tolerance = 0;
      o.detail = std::to_string(c.differ) + " of " + std::to_string(size_t(s.batch) * s.M * s.N) + " differ, " +
                 std::to_string(c.between_written) + " between the rows (columns) or products written";
    } catch (const std::exception &error) {
      o.failure = error.what();
    }
    record(name, shape, "dense layouts, bits", o);
  }
}

} // namespace

void check_layout_matrix() {
  std::printf("\n==== bf16 (f32 on FFMA): every operand layout with every output layout ====\n");
  for (Path path : device_paths()) {
    check_path(path, {131, 133, 200}, layouts_besides_dense(), "layouts, ");
    if (runs_batches(path))
      check_path(path, {131, 133, 200, 3}, layouts_besides_dense(true), "layouts, ");
  }
}

void layout_matrix_sanitizer_case() {
  const std::vector<Layout> both_transposed = {Layout{true, true, Out::RowsApart},
                                               Layout{true, true, Out::ColumnMajor}};
  for (Path path : device_paths())
    check_path(path, {131, 133, 200}, both_transposed, "layouts (sanitizer), ");
}

} // namespace coalesce::gpu_check
