#pragma once
// One benchmark problem: a precision and a shape, with its inputs on the host
// and the device, the buffers every variant writes, and the reference every
// variant is checked against before it is timed.
//
// The reference is cuBLAS's GEMM of the precision with an f32 output (f32
// accumulation, no 16-bit rounding; cublasSgemm for fp32), itself checked
// against a double-precision product on sampled rows; a variant's output is
// compared on every element with it, plus bias and GELU (erf form, or tanh
// for cuBLASLt) applied in double, at bench::tolerance for the variant.

#include "bench/common/Precisions.h"
#include "runtime/Buffer.h"
#include "runtime/GpuDevice.h"

#include <functional>
#include <string>
#include <vector>

namespace coalesce::bench {

struct Shape {
  int M, N, K;
  /// B stored N x K (nn.Linear's weight: out = A B^T), on every variant.
  bool b_nk = false;
  /// "MxNxK", with "_nk" for B stored N x K.
  std::string name() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + (b_nk ? "_nk" : "");
  }
  double flops() const { return 2.0 * M * N * K; }
  /// The bytes every variant must move at least: A, B and the bias read,
  /// the output written once.
  double bytes(int input_bytes, int output_bytes) const {
    return double(input_bytes) * (double(M) * K + double(N) * K) + double(output_bytes) * M * N + 4.0 * N;
  }
};

/// What a variant computes from s = (A * B)(i, j) + bias(j).
enum class Function { Gemm, GeluErf, GeluTanh };

struct Check {
  double relative_error = 0;
  double tolerance = 0;
  size_t not_finite = 0;
  bool ok() const { return not_finite == 0 && relative_error <= tolerance; }
  std::string describe() const;
};

/// Runs body(begin, end, worker) over [0, n) split across the host's cores.
void parallel_for(size_t n, const std::function<void(size_t, size_t, int)> &body);

class Problem {
public:
  Problem(Precision p, const Shape &s);

  Precision precision() const { return p_; }
  const Shape &shape() const { return s_; }
  /// A key naming the precision and the shape.
  std::string key() const { return std::string(reference::precision_name(p_)) + "/" + s_.name(); }

  // Device buffers: A, B (input type), the f32 bias (ours and the chain's),
  // the bias in the output type (cuBLASLt's), the output and the chain's
  // intermediate (both M x N of the output type).
  gpu::DeviceBuffer A_dev, B_dev, bias_dev, bias_out_dev, out_dev, tmp_dev;

  /// Poisons the output (NaN), runs `run`, waits, and reads the whole output
  /// back (widened to f32) for the checks below.
  void run_poisoned(const std::function<void()> &run);

  /// The last output against the reference for `f` (every element).
  Check check_against_reference(Function f, Comparison c);
  /// The last output, from a run at a small K that reads the leading
  /// elements of A and B as M x K and K x N (N x K for B stored so), against gelu(A B + bias) in
  /// double (tf32 inputs rounded as the instruction rounds them).
  Check check_small_k(int K) const;
  /// Empty, or why the cuBLAS reference itself failed its double check.
  const std::string &reference_error();

private:
  const std::vector<float> &reference();
  float input(const Buffer &b, size_t n) const; ///< exact value the kernels multiply

  Precision p_;
  Shape s_;
  Buffer A_, B_, bias_;
  std::vector<float> out_;  ///< the last output, widened
  std::vector<float> ref_;  ///< the f32-output cuBLAS GEMM
  std::string ref_error_;
  bool have_ref_ = false;
};

} // namespace coalesce::bench
