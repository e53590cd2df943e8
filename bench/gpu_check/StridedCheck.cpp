// A GEMM + bias + exact GELU, out = gelu(A W^T + bias), whose inputs are
// views (Input's strides): A's rows lda apart, nn.Linear's W's rows ldw
// apart, the elements between them NaN. Per precision (bf16 and f16, tf32)
// and path (the warp MMA; the warpgroup MMA with cp.async and with TMA
// copies, tf32's through padded copies; fp32's FFMA schedule), at leading dimensions of whole
// 16-byte vectors (vector copies, the TMA) and not (element copies, the
// kernel's run-time fallback), at whole and ragged shapes. Each against the
// same schedule on dense copies of the views on the GPU (the same bits:
// only the addresses differ) and the double reference on 8 sampled rows.
// Each view's buffer ends at its last element, so a read past it is past
// the allocation (compute-sanitizer's memcheck sees it). The output as a
// view (rows ldc apart) and stored column-major (columns ldc apart, the
// staged tiles copied out down the columns) against the dense output: the
// same bits, and nothing written between its rows (columns).

#include "bench/gpu_check/StridedCheck.h"

#include "bench/gpu_check/MmaPaths.h"
#include "bench/gpu_check/Report.h"
#include "bench/gpu_check/SampledReference.h"
#include "bench/reference/CublasReference.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"
#include "runtime/GpuDevice.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace coalesce::gpu_check {
namespace {

using bench::Precision;

struct Shape {
  int M, N, K, lda, ldw;
  std::string str() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " lda " + std::to_string(lda) +
           " ldw " + std::to_string(ldw);
  }
};

const std::vector<Shape> kShapes = {
    {256, 256, 192, 200, 256}, {131, 264, 200, 264, 208}, {131, 133, 67, 75, 70}, {130, 136, 64, 68, 72}};
constexpr int kSampleRows = 8;

/// How out is stored: dense, rows ldc apart, or column-major with columns
/// ldc apart (out(i, j) at i + j * ldc).
enum class OutLayout { Dense, RowsApart, ColumnMajor };

/// The schedule a view runs on: one of the tensor-core paths, or (none)
/// fp32's FFMA schedule.
struct ViewPath {
  std::optional<MmaPath> mma;
  std::string name() const { return mma ? mma_path_name(*mma) : "FFMA"; }
};

/// The paths of precision `p` on this GPU.
std::vector<ViewPath> view_paths(Precision p) {
  if (p == Precision::FP32)
    return {ViewPath{}};
  std::vector<ViewPath> paths;
  for (MmaPath path : device_mma_paths())
    paths.push_back({path});
  return paths;
}

struct Linear {
  Param M{"M"}, N{"N"}, K{"K"}, lda{"lda"}, ldw{"ldw"}, ldc{"ldc"};
  Var i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, W, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};
  Linear(Precision p, const ViewPath &path, bool views, OutLayout layout = OutLayout::Dense)
      : A(views ? Input("A", bench::input_type(p), {M, K}, {lda, 1}) : Input("A", bench::input_type(p), {M, K})),
        W(views ? Input("W", bench::input_type(p), {N, K}, {ldw, 1}) : Input("W", bench::input_type(p), {N, K})) {
    acc(i, j) = 0.0f;
    acc(i, j) += A(i, k) * W(j, k);
    out(i, j) = cast(bench::output_type(p), gelu(acc(i, j) + bias(j)));
    if (layout == OutLayout::RowsApart)
      out.output_strides({ldc, 1});
    if (layout == OutLayout::ColumnMajor)
      out.output_strides({1, ldc});
    if (!path.mma) {
      schedule_gemm(out, acc, A, W, i, j, k, default_gemm_tiling(0, 0, 0, gpu::Device::get().sm_count()));
      return;
    }
    MmaTiling t = mma_path_tiling(p, *path.mma);
    use_tma_copies_where_needed(t, -1, -1, -1);
    schedule_gemm_mma(out, acc, A, W, i, j, k, t);
  }
};

/// A rows x columns matrix (random, tf32 values for tf32) in a buffer of
/// rows lead elements apart that ends at its last element; NaN between.
Buffer view_buffer(Precision p, int rows, int columns, int lead, uint32_t seed) {
  Type type = bench::input_type(p);
  Buffer dense({rows, columns}, type), parent({(rows - 1) * lead + columns}, type);
  dense.fill_random(seed);
  for (size_t e = 0; e < parent.size(); ++e)
    parent.set(e, std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c) {
      float v = dense.get(size_t(r) * columns + c);
      parent.set(size_t(r) * lead + c, p == Precision::TF32 ? float_to_tf32(v) : v);
    }
  return parent;
}

Buffer dense_copy(const Buffer &parent, int rows, int columns, int lead) {
  Buffer dense({rows, columns}, parent.type());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < columns; ++c)
      dense.set(size_t(r) * columns + c, parent.get(size_t(r) * lead + c));
  return dense;
}

void check_one(Precision p, const ViewPath &path, const Shape &s, const std::string &name) {
  Outcome o_ref, o_bits;
  try {
    Linear views(p, path, true), dense(p, path, false);
    Buffer a = view_buffer(p, s.M, s.K, s.lda, 81), w = view_buffer(p, s.N, s.K, s.ldw, 82), bias({s.N});
    bias.fill_random(83);
    Buffer a_dense = dense_copy(a, s.M, s.K, s.lda), w_dense = dense_copy(w, s.N, s.K, s.ldw);
    Buffer got({s.M, s.N}, bench::output_type(p)), want({s.M, s.N}, bench::output_type(p));
    got.poison();
    want.poison();
    Pipeline(views.out).realize_on_gpu(
        {{"A", a}, {"W", w}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}, {"lda", s.lda}, {"ldw", s.ldw}}, got);
    Pipeline(dense.out).realize_on_gpu(
        {{"A", a_dense}, {"W", w_dense}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}}, want);
    size_t differ = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      o_ref.not_finite += std::isfinite(got.get(e)) ? 0 : 1;
      differ += got.get(e) == want.get(e) ? 0 : 1;
    }
    BiasGeluError reference;
    for (int r : sampled_rows(s.M, kSampleRows))
      reference.add_row(
          bias, s.N, s.K, [&](int q) { return double(a_dense.get(size_t(r) * s.K + q)); },
          [&](int q, int c) { return double(w_dense.get(size_t(c) * s.K + q)); },
          [&](int c) { return double(got.get(size_t(r) * s.N + c)); });
    o_ref.error = reference.error();
    o_ref.tolerance = bench::tolerance(p, bench::Comparison::OursVsDouble);
    o_ref.detail = path.name();
    record(name, s.str(), "double (" + std::to_string(kSampleRows) + " rows)", o_ref);
    o_bits.error = double(differ) / double(got.size());
    o_bits.tolerance = 0;
    o_bits.detail = std::to_string(differ) + " of " + std::to_string(got.size()) + " differ";
    record(name, s.str(), "dense copies, bits", o_bits);
  } catch (const std::exception &error) {
    o_ref.failure = error.what();
    record(name, s.str(), "double", o_ref);
  }
}

// The output a view with rows ldc apart (the dense inputs): the dense
// output's bits, and every element between the rows as the buffer held it.
// out as a view (rows ldc apart) or column-major (columns ldc apart): the
// dense output's bits at each element's place, nothing written between the
// rows (columns).
void check_output_view(Precision p, const ViewPath &path, const Shape &s, const std::string &name, OutLayout layout) {
  Outcome o;
  const bool column_major = layout == OutLayout::ColumnMajor;
  // Runs along the contiguous dimension (rows, or columns) of whole 16-byte
  // vectors where A's rows are, else not.
  const int length = column_major ? s.M : s.N, runs = column_major ? s.N : s.M;
  const int ldc = length + (s.lda % 8 == 0 ? 8 : 3);
  const std::string shape =
      std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) + " ldc " + std::to_string(ldc);
  try {
    Linear view(p, path, false, layout), dense(p, path, false);
    Buffer a({s.M, s.K}, bench::input_type(p)), w({s.N, s.K}, bench::input_type(p)), bias({s.N});
    a.fill_random(84);
    w.fill_random(85);
    bias.fill_random(86);
    const float between = -123.0f;
    Buffer got({(runs - 1) * ldc + length}, bench::output_type(p)), want({s.M, s.N}, bench::output_type(p));
    for (size_t e = 0; e < got.size(); ++e)
      got.set(e, between);
    want.poison();
    Pipeline(view.out).realize_on_gpu(
        {{"A", a}, {"W", w}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}, {"ldc", ldc}}, got);
    Pipeline(dense.out).realize_on_gpu({{"A", a}, {"W", w}, {"bias", bias}, {"M", s.M}, {"N", s.N}, {"K", s.K}}, want);
    size_t differ = 0, between_written = 0;
    for (size_t e = 0; e < got.size(); ++e) {
      size_t run = e / size_t(ldc), along = e % size_t(ldc);
      size_t r = column_major ? along : run, c = column_major ? run : along;
      if (along < size_t(length))
        differ += got.get(e) == want.get(r * s.N + c) ? 0 : 1;
      else
        between_written += got.get(e) == between ? 0 : 1;
    }
    o.error = double(differ + between_written) / double(got.size());
    o.tolerance = 0;
    o.detail = std::to_string(differ) + " of " + std::to_string(size_t(s.M) * s.N) + " differ, " +
               std::to_string(between_written) + (column_major ? " between the columns" : " between the rows") +
               " written";
    record(name, shape, "dense output, bits", o);
  } catch (const std::exception &error) {
    o.failure = error.what();
    record(name, shape, "dense output, bits", o);
  }
}

} // namespace

void check_strided(Precision p) {
  std::printf("\n==== %s: inputs that are views (strides) ====\n", reference::precision_name(p));
  for (const ViewPath &path : view_paths(p))
    for (const Shape &s : kShapes) {
      const std::string precision = reference::precision_name(p);
      check_one(p, path, s, precision + " views, " + path.name());
      check_output_view(p, path, s, precision + " output view, " + path.name(), OutLayout::RowsApart);
      check_output_view(p, path, s, precision + " column-major output, " + path.name(), OutLayout::ColumnMajor);
    }
}

void strided_sanitizer_case() {
  for (const ViewPath &path : view_paths(Precision::BF16)) {
    check_one(Precision::BF16, path, {131, 264, 200, 208, 204}, "bf16 views (sanitizer), " + path.name());
    check_output_view(Precision::BF16, path, {131, 264, 200, 203, 204}, "bf16 output view (sanitizer), " + path.name(),
                      OutLayout::RowsApart);
    check_output_view(Precision::BF16, path, {136, 131, 200, 208, 204},
                      "bf16 column-major output (sanitizer), " + path.name(), OutLayout::ColumnMajor);
  }
  check_one(Precision::FP32, ViewPath{}, {131, 264, 200, 203, 204}, "fp32 views (sanitizer), FFMA");
}

} // namespace coalesce::gpu_check
