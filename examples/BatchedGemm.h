#pragma once
// A batch of GEMMs with bias and exact GELU, as the tests and the GPU check
// write it:
//
//   acc(b, i, j) = sum over k of A(b, i, k) * B(b, k, j)
//   out(b, i, j) = out_type(gelu(acc(b, i, j) + bias(j)))
//
// Either operand may leave out the batch (a batch stride of 0: one weight
// for the whole batch, or one A for many weights), and B may be stored
// N x K and read B(b, j, k), as nn.Linear keeps its weight. The same
// algorithm without the batch (out(i, j)) is one product of it, what a
// batch's element is checked against. With views, A and B are strided
// batches as cublasGemmStridedBatchedEx takes them: each product's rows
// lda (ldb) apart, the products stride_a (stride_b) apart.

#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "runtime/Coalesce.h"

#include <string>
#include <vector>

namespace coalesce::examples {

/// Which operands carry the batch, and how B is stored.
enum class BatchedOperands {
  Both,            ///< A(b, i, k) * B(b, k, j)
  BothWeightsNK,   ///< A(b, i, k) * B(b, j, k)
  SharedA,         ///< A(i, k) * B(b, k, j): one A for every B
  SharedWeightsNK, ///< A(b, i, k) * B(j, k): one nn.Linear weight for the batch
};

inline const char *batched_operands_name(BatchedOperands o) {
  switch (o) {
  case BatchedOperands::Both: return "A(b, i, k) * B(b, k, j)";
  case BatchedOperands::BothWeightsNK: return "A(b, i, k) * B(b, j, k)";
  case BatchedOperands::SharedA: return "A(i, k) * B(b, k, j)";
  case BatchedOperands::SharedWeightsNK: return "A(b, i, k) * B(j, k)";
  }
  return "";
}

/// Where a strided batch's elements lie: rows `lda` (`ldb`) apart, products
/// `stride_a` (`stride_b`) apart.
struct BatchStrides {
  int stride_a = 0, lda = 0, stride_b = 0, ldb = 0;
};

struct BatchedGemm {
  BatchedOperands operands;
  bool batched; ///< false: one product (out(i, j)), the same layouts without the batch
  bool views;   ///< A and B views: rows lda / ldb apart, products stride_a / stride_b apart
  Param batch{"Batch"}, M{"M"}, N{"N"}, K{"K"};
  Param stride_a{"stride_a"}, lda{"lda"}, stride_b{"stride_b"}, ldb{"ldb"};
  Var b{"b"}, i{"i"}, j{"j"};
  RDom k{0, K, "k"};
  Input A, B, bias{"bias", Float(32), {N}};
  Func acc{"acc"}, out{"out"};

  bool a_batched() const { return batched && operands != BatchedOperands::SharedA; }
  bool b_batched() const { return batched && operands != BatchedOperands::SharedWeightsNK; }
  bool b_nk() const {
    return operands == BatchedOperands::BothWeightsNK || operands == BatchedOperands::SharedWeightsNK;
  }

  /// The algorithm, A and B of type `in` (views, with `strided`), out of
  /// `out_type`; unscheduled.
  BatchedGemm(Type in, Type out_type, BatchedOperands o, bool with_batch = true, bool strided = false)
      : operands(o), batched(with_batch), views(strided),
        A(input("A", in, extents(a_batched(), M, K), a_batched(), stride_a, lda)),
        B(input("B", in, b_nk() ? extents(b_batched(), N, K) : extents(b_batched(), K, N), b_batched(), stride_b,
                ldb)) {
    std::vector<Expr> point = batched ? std::vector<Expr>{b, i, j} : std::vector<Expr>{i, j};
    acc(point) = 0.0f;
    acc(point) += A(at(a_batched(), i, k)) * (b_nk() ? B(at(b_batched(), j, k)) : B(at(b_batched(), k, j)));
    out(point) = cast(out_type, gelu(acc(point) + bias(j)));
  }

  /// The FFMA schedule (dsl/recipes/GemmSchedule.h): f32 inputs.
  BatchedGemm &schedule_ffma(const GemmTiling &t) {
    schedule_gemm(out, acc, A, B, i, j, k, t);
    return *this;
  }

  /// The tensor-core schedule (dsl/recipes/GemmMmaSchedule.h).
  BatchedGemm &schedule_mma(const MmaTiling &t) {
    schedule_gemm_mma(out, acc, A, B, i, j, k, t);
    return *this;
  }

  /// The buffers' shapes at a batch of `count` products of M x N x K.
  std::vector<int> a_shape(int count, int m, int kk) const { return shape(a_batched(), count, m, kk); }
  std::vector<int> b_shape(int count, int n, int kk) const {
    return b_nk() ? shape(b_batched(), count, n, kk) : shape(b_batched(), count, kk, n);
  }
  std::vector<int> out_shape(int count, int m, int n) const { return shape(batched, count, m, n); }

  /// The arguments, by name (with views, their strides from `strides`).
  Arguments arguments(const Buffer &a, const Buffer &w, const Buffer &bias_values, int count, int m, int n, int kk,
                      const BatchStrides &strides = {}) const {
    Arguments args = {{"A", a}, {"B", w}, {"bias", bias_values}, {"M", m}, {"N", n}, {"K", kk}};
    if (batched)
      args.emplace("Batch", count);
    if (views) {
      args.emplace("lda", strides.lda);
      args.emplace("ldb", strides.ldb);
      if (a_batched())
        args.emplace("stride_a", strides.stride_a);
      if (b_batched())
        args.emplace("stride_b", strides.stride_b);
    }
    return args;
  }

private:
  // A dense input, or with views one whose rows are `lead` apart and, with
  // a batch, products `stride` apart.
  Input input(const char *name, Type type, std::vector<Expr> shape, bool with_batch, const Param &stride,
              const Param &lead) const {
    if (!views)
      return Input(name, type, shape);
    std::vector<Expr> strides = {lead, 1};
    if (with_batch)
      strides.insert(strides.begin(), stride);
    return Input(name, type, shape, strides);
  }
  std::vector<Expr> extents(bool with_batch, Expr rows, Expr columns) const {
    return with_batch ? std::vector<Expr>{batch, rows, columns} : std::vector<Expr>{rows, columns};
  }
  std::vector<Expr> at(bool with_batch, Expr x, Expr y) const {
    return with_batch ? std::vector<Expr>{b, x, y} : std::vector<Expr>{x, y};
  }
  static std::vector<int> shape(bool with_batch, int count, int rows, int columns) {
    return with_batch ? std::vector<int>{count, rows, columns} : std::vector<int>{rows, columns};
  }
};

/// `dense` (products x rows x columns, or rows x columns) laid out as a
/// strided batch's view: each product's rows `lead` apart, the products
/// `stride` apart, the elements between them NaN (so that a read of one
/// shows in the result). The buffer ends at the view's last element.
inline Buffer strided_view(const Buffer &dense, int stride, int lead) {
  const bool with_batch = dense.dimensions() == 3;
  const int count = with_batch ? dense.shape()[0] : 1, rows = dense.shape()[with_batch ? 1 : 0],
            columns = dense.shape()[with_batch ? 2 : 1];
  Buffer view({(count - 1) * stride + (rows - 1) * lead + columns}, dense.type());
  view.poison();
  for (int z = 0; z < count; ++z)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < columns; ++c)
        view.set(size_t(z) * stride + size_t(r) * lead + c, dense.get((size_t(z) * rows + r) * columns + c));
  return view;
}

/// Product z of a batch's buffer (its last two dimensions), or the buffer
/// itself where it has no batch.
inline Buffer batch_element(const Buffer &whole, int z) {
  if (whole.dimensions() == 2)
    return whole;
  int rows = whole.shape()[1], columns = whole.shape()[2];
  Buffer part({rows, columns}, whole.type());
  size_t first = static_cast<size_t>(z) * rows * columns;
  for (size_t e = 0; e < part.size(); ++e)
    part.set(e, whole.get(first + e));
  return part;
}

} // namespace coalesce::examples
