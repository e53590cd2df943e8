// A batch of GEMMs + bias + exact GELU on tensor cores
// (examples/BatchedGemm.h: out(b, i, j), the batch the grid's z), per
// precision (bf16 and f16, tf32; fp32 on the FFMA schedule), on each path
// the target has: the warp
// MMA; the warpgroup MMA with cp.async copies and with the TMA's (3-D boxes
// of one product's rows; tf32 takes cp.async there, as the recipe says).
// Operands: both batched, B stored K x N and N x K; one A for every B; one
// nn.Linear weight for the batch. Shapes: whole tiles, ragged tiles whose
// rows are whole 16-byte vectors (the TMA reads them), and rows that are
// not (the cp.async copies at run time). Each product of the batch has the
// bits of the same schedule run on that product alone on the GPU (whose
// 2-D kernels this check does not vouch for: the other sections do), and
// matches the double reference on 4 sampled rows of every product. The
// output is poisoned (NaN) before the launch; every element must be
// finite. On a persistent grid (gpu_persistent_blocks walking the batch's
// tiles), fewer blocks than tiles, with and without producer warps whose
// pipeline runs across the tiles, compared alike. A strided batch (A and B
// views: rows lda / ldb apart, products stride_a / stride_b apart, as
// cublasGemmStridedBatchedEx takes them) against the same schedule on
// dense copies: the same bits.

#include "bench/gpu_check/BatchedCheck.h"

#include "bench/gpu_check/MmaPaths.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;
using examples::BatchedGemm;
using examples::BatchedOperands;

struct Shape {
  int batch, M, N, K;
  std::string str() const {
    return std::to_string(batch) + "x" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  }
};

const std::vector<Shape> kShapes = {{3, 256, 256, 192}, {3, 131, 264, 200}, {3, 131, 133, 67}};
constexpr int kSampleRows = 4;

/// Row r of product z added to `reference`: A and B as the batch lays
/// them out (either shared by every product), `got` product z's output.
void add_reference_row(BiasGeluError &reference, const BatchedGemm &g, const Buffer &a, const Buffer &b,
                       const Buffer &bias, const Buffer &got, const Shape &s, int z, int r) {
  const size_t a0 = (g.a_batched() ? size_t(z) * s.M * s.K : 0) + size_t(r) * s.K;
  const size_t b0 = g.b_batched() ? size_t(z) * s.N * s.K : 0;
  reference.add_row(
      bias, s.N, s.K, [&](int q) { return double(a.get(a0 + q)); },
      [&](int q, int c) { return double(b.get(b0 + (g.b_nk() ? size_t(c) * s.K + q : size_t(q) * s.N + c))); },
      [&](int c) { return double(got.get(size_t(r) * s.N + c)); });
}

/// How a case's blocks walk the batch's tiles.
enum class Grid { BlockPerTile, Persistent, PersistentWithProducers };

const char *grid_name(Grid g) {
  switch (g) {
  case Grid::BlockPerTile: return "";
  case Grid::Persistent: return ", a persistent grid of 5 blocks";
  case Grid::PersistentWithProducers: return ", a persistent grid of 5 blocks, producer warps across tiles";
  }
  return "";
}

/// The path's tiling on grid `g`. A persistent block's output tile cannot
/// take the slots' bytes, so three stages leave it room; producer warps
/// keep 40 registers on 128 x 256 tiles, storing directly (the
/// configuration measured for single products).
MmaTiling grid_tiling(Precision p, MmaPath path, Grid g) {
  MmaTiling t = mma_path_tiling(p, path);
  if (g == Grid::BlockPerTile)
    return t;
  t.persistent_blocks = 5;
  t.stages = std::min(t.stages, 3);
  stage_values_where_sums_do_not_fit(t); // the values' tile beside three stages, not the sums
  fit_output_tile_beside_stages(t);
  if (g == Grid::PersistentWithProducers) {
    t.block_n = t.warp_n = 256;
    t.min_blocks_per_sm = 1;
    t.stages = 4;
    t.producer_warps = 4;
    t.producer_registers = 40;
    t.tile_stores = TileStores::Direct;
  }
  return t;
}

/// The batch of `o` at `s`, scheduled by `schedule` (described by
/// `schedule_name`), against each product alone on the GPU (the same bits)
/// and the double reference on sampled rows.
void check_scheduled(Precision p, const std::function<void(BatchedGemm &)> &schedule, const std::string &schedule_name,
                     BatchedOperands o, const Shape &s, const std::string &name) {
  Outcome o_ref, o_bits;
  const std::string shape = s.str();
  try {
    Type in = bench::input_type(p), out_type = bench::output_type(p);
    BatchedGemm batched(in, out_type, o), alone(in, out_type, o, false);
    schedule(batched);
    schedule(alone);
    Buffer a(batched.a_shape(s.batch, s.M, s.K), in), b(batched.b_shape(s.batch, s.N, s.K), in), bias({s.N}),
        out(batched.out_shape(s.batch, s.M, s.N), out_type);
    a.fill_random(41);
    b.fill_random(42);
    bias.fill_random(43);
    if (p == Precision::TF32) // the values the instruction multiplies
      for (Buffer *operand : {&a, &b})
        for (float &v : operand->values())
          v = float_to_tf32(v);
    out.poison();
    auto start = std::chrono::steady_clock::now();
    Pipeline(batched.out).realize_on_gpu(batched.arguments(a, b, bias, s.batch, s.M, s.N, s.K), out);
    o_ref.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    Pipeline one(alone.out);
    size_t differ = 0;
    BiasGeluError reference;
    for (int z = 0; z < s.batch; ++z) {
      Buffer a_z = examples::batch_element(a, z), b_z = examples::batch_element(b, z);
      Buffer want(alone.out_shape(1, s.M, s.N), out_type), got = examples::batch_element(out, z);
      want.poison();
      one.realize_on_gpu(alone.arguments(a_z, b_z, bias, 1, s.M, s.N, s.K), want);
      for (size_t e = 0; e < got.size(); ++e) {
        o_ref.not_finite += std::isfinite(got.get(e)) ? 0 : 1;
        differ += got.get(e) == want.get(e) || (std::isnan(got.get(e)) && std::isnan(want.get(e))) ? 0 : 1;
      }
      for (int r : sampled_rows(s.M, kSampleRows))
        add_reference_row(reference, batched, a, b, bias, got, s, z, r);
    }
    o_ref.error = reference.error();
    o_ref.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
    o_ref.detail = schedule_name + ", " + examples::batched_operands_name(o);
    record(name, shape, "double (" + std::to_string(kSampleRows) + " rows per product)", o_ref);
    size_t elements = size_t(s.batch) * s.M * s.N;
    o_bits.error = double(differ) / double(elements);
    o_bits.tolerance = 0;
    o_bits.detail = std::to_string(differ) + " of " + std::to_string(elements) + " differ";
    record(name, shape, "each product alone, bits", o_bits);
  } catch (const std::exception &error) {
    o_ref.failure = error.what();
    record(name, shape, "double", o_ref);
  }
}

void check_one(Precision p, MmaPath path, BatchedOperands o, const Shape &s, const std::string &name,
               Grid grid = Grid::BlockPerTile) {
  MmaTiling t = grid_tiling(p, path, grid);
  check_scheduled(
      p, [&](BatchedGemm &g) { g.schedule_mma(t); },
      std::string(mma_path_name(path)) + grid_name(grid) + ", " + t.str(), o, s, name);
}

/// fp32's FFMA schedule (schedule_gemm).
void check_ffma(BatchedOperands o, const Shape &s, const GemmTiling &t, const std::string &name) {
  check_scheduled(
      Precision::FP32, [&](BatchedGemm &g) { g.schedule_ffma(t); }, "FFMA, " + t.str(), o, s, name);
}

/// The strided batch on `path` against the same schedule on dense copies,
/// on the GPU: the same bits, every element finite.
void check_strided_batch(Precision p, MmaPath path, BatchedOperands o, const Shape &s, int pad,
                         const std::string &name) {
  Outcome outcome;
  const std::string shape = s.str() + " rows +" + std::to_string(pad);
  try {
    Type in = bench::input_type(p), out_type = bench::output_type(p);
    MmaTiling t = mma_path_tiling(p, path);
    BatchedGemm views(in, out_type, o, true, true), dense(in, out_type, o);
    views.schedule_mma(t);
    dense.schedule_mma(t);
    const int b_rows = views.b_nk() ? s.N : s.K, b_columns = views.b_nk() ? s.K : s.N;
    examples::BatchStrides strides{s.M * (s.K + pad) + 3 * pad, s.K + pad, b_rows * (b_columns + pad) + 5 * pad,
                                   b_columns + pad};
    Buffer a(views.a_shape(s.batch, s.M, s.K), in), b(views.b_shape(s.batch, s.N, s.K), in);
    a.fill_random(71);
    b.fill_random(72);
    if (p == Precision::TF32) // the values the instruction multiplies
      for (Buffer *operand : {&a, &b})
        for (float &v : operand->values())
          v = float_to_tf32(v);
    Buffer a_view = examples::strided_view(a, strides.stride_a, strides.lda),
           b_view = examples::strided_view(b, strides.stride_b, strides.ldb);
    Buffer bias({s.N});
    bias.fill_random(73);
    Buffer got(views.out_shape(s.batch, s.M, s.N), out_type), want(views.out_shape(s.batch, s.M, s.N), out_type);
    got.poison();
    want.poison();
    Pipeline(views.out).realize_on_gpu(views.arguments(a_view, b_view, bias, s.batch, s.M, s.N, s.K, strides), got);
    Pipeline(dense.out).realize_on_gpu(dense.arguments(a, b, bias, s.batch, s.M, s.N, s.K), want);
    size_t differ = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      outcome.not_finite += std::isfinite(got.get(e)) ? 0 : 1;
      differ += got.get(e) == want.get(e) ? 0 : 1;
    }
    outcome.error = double(differ) / double(got.size());
    outcome.tolerance = 0;
    outcome.detail = std::to_string(differ) + " of " + std::to_string(got.size()) + " differ, " +
                     examples::batched_operands_name(o) + ", " + t.str();
  } catch (const std::exception &error) {
    outcome.failure = error.what();
  }
  record(name, shape, "dense copies, bits", outcome);
}

} // namespace

void check_batched(Precision p) {
  if (p == Precision::FP32) {
    std::printf("\n==== fp32: a batch of products on the FFMA schedule ====\n");
    GemmTiling small = default_gemm_tiling(0, 0, 0, gpu::Device::get().sm_count()), three_stages = small;
    three_stages.stages = 3;
    for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                              BatchedOperands::SharedWeightsNK})
      for (const Shape &s : kShapes)
        check_ffma(o, s, small, "fp32 batched, FFMA");
    for (const Shape &s : kShapes) {
      check_ffma(BatchedOperands::Both, s, three_stages, "fp32 batched, FFMA, 3 stages");
      check_ffma(BatchedOperands::SharedWeightsNK, s, small_m_tiling(16), "fp32 batched, FFMA, 16-row tiles");
    }
    return;
  }
  std::printf("\n==== %s: a batch of products on tensor cores ====\n", reference::precision_name(p));
  const std::string precision = reference::precision_name(p);
  for (MmaPath path : device_mma_paths())
    for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                              BatchedOperands::SharedWeightsNK})
      for (const Shape &s : kShapes)
        check_one(p, path, o, s, precision + " batched, " + mma_path_name(path));
  // Persistent grids on the warpgroup MMA's TMA path (tf32 takes cp.async
  // copies for a batch; producer warps need the TMA's).
  for (MmaPath path : device_mma_paths())
    for (Grid grid : {Grid::Persistent, Grid::PersistentWithProducers}) {
      if (grid == Grid::PersistentWithProducers && (path != MmaPath::WarpgroupTma || p == Precision::TF32))
        continue;
      for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::SharedWeightsNK})
        for (const Shape &s : kShapes)
          check_one(p, path, o, s, precision + " batched, " + mma_path_name(path) + grid_name(grid), grid);
    }
  // Strided batches: rows of whole 16-byte vectors (pad 8) and not (pad 3).
  for (MmaPath path : device_mma_paths())
    for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                              BatchedOperands::SharedWeightsNK})
      for (int pad : {8, 3})
        check_strided_batch(p, path, o, kShapes[1], pad, precision + " strided batch, " + mma_path_name(path));
}

void batched_sanitizer_case() {
  check_ffma(BatchedOperands::SharedWeightsNK, {2, 131, 264, 200},
             default_gemm_tiling(0, 0, 0, gpu::Device::get().sm_count()), "fp32 batched (sanitizer), FFMA");
  for (MmaPath path : device_mma_paths())
    check_one(Precision::BF16, path, BatchedOperands::SharedWeightsNK, {2, 131, 264, 200},
              std::string("bf16 batched (sanitizer), ") + mma_path_name(path));
  if (target_for_current_device().has_warpgroup_mma())
    for (Grid grid : {Grid::Persistent, Grid::PersistentWithProducers})
      check_one(Precision::BF16, MmaPath::WarpgroupTma, BatchedOperands::Both, {3, 131, 264, 200},
                std::string("bf16 batched (sanitizer), warpgroup MMA, TMA") + grid_name(grid), grid);
  for (MmaPath path : device_mma_paths())
    check_strided_batch(Precision::BF16, path, BatchedOperands::BothWeightsNK, {2, 131, 264, 200}, 8,
                        std::string("bf16 strided batch (sanitizer), ") + mma_path_name(path));
}

} // namespace coalesce::gpu_check
