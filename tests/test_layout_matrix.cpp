// Every operand layout with every output layout, on every path: A stored M x
// K or K x M, B stored K x N or N x K (nn.Linear's weight), out dense, a
// view with rows ldc apart, or column-major with columns ldc apart; on FFMA,
// the warp MMA, the warpgroup MMA (cp.async with direct stores; the TMA with
// the tile, or the sums, through shared memory) and split-K (the last
// block's combine, the combine kernel). The features were tested one at a
// time; here each combination, on the CPU (which runs the statements the
// GPU runs), gives the bits of the same schedule on the dense layouts (A
// M x K, B K x N, out M x N) at ragged shapes and K = 1 / 3, and writes
// nothing between an output view's rows or columns. The suite runs one
// ragged shape per combination; COALESCE_LAYOUT_MATRIX_FULL=1 adds K = 0,
// 1 and 3 and a second shape.

#include "bench/gpu_check/LayoutMatrixGemm.h"
#include "codegen/PtxAssembler.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace coalesce;
using namespace coalesce::layout_matrix;

namespace {

struct Shape {
  int M, N, K;
  int batch = 1; ///< products, where the layouts are batched
};

/// The dense layouts' output of `path`'s schedule (batched or not, as
/// `batched`) at `s`.
Buffer dense_output(Path path, bool batched, const Buffer &a, const Buffer &b, const Buffer &bias, const Shape &s) {
  Layout dense_layout;
  dense_layout.batched = batched;
  MatrixGemm dense(path, dense_layout);
  Buffer want = output_buffer(path, dense_layout, s.M, s.N, s.batch);
  want.poison();
  StoredInputs inputs(dense_layout, a, b, s.M, s.N, s.K, s.batch);
  Pipeline(dense.out).realize_on_cpu(layout_arguments(dense_layout, inputs, bias, s.M, s.N, s.K, s.batch), want);
  return want;
}

/// `layout`'s output against `want`, the dense layouts' bits: every element
/// equal, none NaN, nothing between the rows (columns) or products of a view
/// written.
void check_layout(Path path, const Layout &layout, const Buffer &a, const Buffer &b, const Buffer &bias,
                  const Buffer &want, const Shape &s) {
  INFO(std::string(path_name(path)), ", A ", layout.a_km ? "K x M" : "M x K", ", B ", layout.b_nk ? "N x K" : "K x N",
       ", ", std::string(out_name(layout.out)), layout.batched ? ", batched " : ", ", s.batch, " x ", s.M, " x ", s.N,
       " x ", s.K);
  MatrixGemm g(path, layout);
  Buffer got = output_buffer(path, layout, s.M, s.N, s.batch);
  StoredInputs inputs(layout, a, b, s.M, s.N, s.K, s.batch);
  Pipeline(g.out).realize_on_cpu(layout_arguments(layout, inputs, bias, s.M, s.N, s.K, s.batch), got);
  Comparison c = compare_with_dense(layout, got, want, s.M, s.N);
  CHECK(c.nan == 0);
  CHECK(c.differ == 0);
  CHECK(c.between_written == 0);
}

void check_matrix(const Shape &s, uint32_t seed, bool batched = false) {
  for (Path path : kPaths) {
    if (batched && !runs_batches(path))
      continue;
    auto dims = [&](int rows, int columns) {
      return batched ? std::vector<int>{s.batch, rows, columns} : std::vector<int>{rows, columns};
    };
    Buffer a(dims(s.M, s.K), input_type(path)), b(dims(s.K, s.N), input_type(path)), bias({s.N});
    a.fill_random(seed);
    b.fill_random(seed + 1);
    bias.fill_random(seed + 2);
    Buffer want = dense_output(path, batched, a, b, bias, s);
    for (const Layout &layout : layouts_besides_dense(batched))
      check_layout(path, layout, a, b, bias, want, s);
  }
}

bool full_matrix() {
  const char *full = std::getenv("COALESCE_LAYOUT_MATRIX_FULL");
  return full && *full && std::string(full) != "0";
}

} // namespace

TEST_CASE("every operand layout with every output layout, on every path, gives the dense layouts' bits") {
  // Ragged in M and N (several tiles, partial ones), K past one k step of
  // the warpgroup MMA with a partial last step; split-K's slices ragged.
  check_matrix({131, 133, 200}, 11);
  if (!full_matrix())
    return;
  check_matrix({67, 264, 72}, 21);
  for (int K : {0, 1, 3})
    check_matrix({70, 75, K}, 31);
}

TEST_CASE("a batch in every operand and output layout, on every path that runs batches, gives the dense batch's bits") {
  // Three products; an output view's products 3 elements past each other's
  // last element.
  check_matrix({70, 75, 37, 3}, 41, true);
  if (!full_matrix())
    return;
  check_matrix({131, 264, 72, 2}, 51, true);
  for (int K : {1, 3})
    check_matrix({33, 40, K, 2}, 61, true);
}

TEST_CASE("every layout's kernels assemble for sm_90a as the GPU check compiles them (COALESCE_LAYOUT_MATRIX_FULL)") {
  if (!full_matrix() || !ptxas_available()) {
    MESSAGE("COALESCE_LAYOUT_MATRIX_FULL unset or ptxas not found: skipping");
    return;
  }
  std::vector<std::pair<Path, Layout>> cases;
  for (Path path : kPaths)
    for (bool batched : {false, true})
      if (!batched || runs_batches(path))
        for (const Layout &layout : layouts_besides_dense(batched))
          cases.push_back({path, layout});
  for (const auto &[path, layout] : cases) {
    INFO(std::string(path_name(path)), ", A ", layout.a_km ? "K x M" : "M x K", ", B ", layout.b_nk ? "N x K" : "K x N",
         ", ", std::string(out_name(layout.out)), layout.batched ? ", batched" : "");
    MatrixGemm g(path, layout);
    PtxasResult assembled = Pipeline(g.out).assemble(parse_gpu_target("sm_90a"));
    CHECK_FALSE(assembled.kernels.empty());
    // The tensor-core kernels without spills. (The FFMA default, whose
    // tiling is chosen for B stored K x N, spills at its 128-register cap
    // with W stored N x K: 16 bytes with A M x K and a dense output.)
    for (const KernelResources &kernel : assembled.kernels) {
      INFO(kernel.name);
      if (path != Path::Ffma)
        CHECK_FALSE(kernel.spills());
    }
  }
}
