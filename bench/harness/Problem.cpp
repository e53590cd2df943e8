#include "bench/harness/Problem.h"

#include "bench/reference/CublasReference.h"
#include "runtime/CudaDriver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

namespace coalesce::bench {
namespace {

constexpr int kSampledRows = 8;

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

gpu::DeviceBuffer upload(const Buffer &b) {
  gpu::DeviceBuffer device(b.size_in_bytes());
  device.upload(b.raw_data(), b.size_in_bytes());
  return device;
}

/// ||got - want|| / ||want|| over rows [0, rows) of an N-column matrix,
/// want(i, j) in double; elements of `got` that are not finite are counted.
Check compare(const float *got, size_t rows, int N, const std::function<double(size_t, int)> &want) {
  const int max_workers = 64;
  std::vector<double> diff(max_workers, 0), norm(max_workers, 0);
  std::vector<size_t> bad(max_workers, 0);
  parallel_for(rows, [&](size_t begin, size_t end, int w) {
    double d = 0, n = 0;
    size_t b = 0;
    for (size_t i = begin; i < end; ++i)
      for (int j = 0; j < N; ++j) {
        const double value = got[i * N + j], e = want(i, j);
        if (!std::isfinite(value)) {
          ++b;
          continue;
        }
        d += (value - e) * (value - e);
        n += e * e;
      }
    diff[w] = d;
    norm[w] = n;
    bad[w] = b;
  });
  Check c;
  double d = 0, n = 0;
  for (int w = 0; w < max_workers; ++w) {
    d += diff[w];
    n += norm[w];
    c.not_finite += bad[w];
  }
  c.relative_error = c.not_finite || !std::isfinite(d) ? INFINITY : std::sqrt(d / std::max(n, 1e-300));
  return c;
}

} // namespace

std::string Check::describe() const {
  char text[160];
  if (not_finite)
    std::snprintf(text, sizeof text, "%zu values not finite (unwritten or NaN)", not_finite);
  else
    std::snprintf(text, sizeof text, "relative error %.3g (tolerance %.2g)", relative_error, tolerance);
  return text;
}

void parallel_for(size_t n, const std::function<void(size_t, size_t, int)> &body) {
  int workers = static_cast<int>(std::max(1u, std::min(64u, std::thread::hardware_concurrency())));
  workers = static_cast<int>(std::min<size_t>(workers, std::max<size_t>(n, 1)));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back(body, n * w / workers, n * (w + 1) / workers, w);
  for (std::thread &t : threads)
    t.join();
}

Problem::Problem(Precision p, const Shape &s)
    : p_(p), s_(s), A_({s.M, s.K}, input_type(p)),
      B_(s.b_nk ? std::vector<int>{s.N, s.K} : std::vector<int>{s.K, s.N}, input_type(p)), bias_({s.N}) {
  // Uniform in [-1, 1), exact in the input type; the bias on the grid that
  // f32, bf16 and f16 all hold exactly, so cuBLASLt's output-typed bias and
  // our f32 bias are the same numbers.
  A_.fill_random(1);
  B_.fill_random(2);
  bias_.fill_random(3);
  Buffer bias_out({s.N}, output_type(p));
  for (size_t j = 0; j < bias_.size(); ++j) {
    bias_.set(j, bias_on_common_grid(bias_.get(j)));
    bias_out.set(j, bias_.get(j));
  }
  A_dev = upload(A_);
  B_dev = upload(B_);
  bias_dev = upload(bias_);
  bias_out_dev = upload(bias_out);
  const size_t out_bytes = size_t(s.M) * s.N * output_type(p).bytes();
  out_dev = gpu::DeviceBuffer(out_bytes);
  tmp_dev = gpu::DeviceBuffer(out_bytes);
  out_.resize(size_t(s.M) * s.N);
}

float Problem::input(const Buffer &b, size_t n) const {
  const float v = b.get(n);
  if (p_ != Precision::TF32)
    return v;
  return bench_tf32_truncated() ? float_truncated_to_tf32(v) : float_to_tf32(v);
}

void Problem::run_poisoned(const std::function<void()> &run) {
  out_dev.fill_bytes(0xFF);
  run();
  gpu::synchronize();
  if (output_type(p_) == Float(32)) {
    out_dev.download(out_);
    return;
  }
  Buffer bits({s_.M, s_.N}, output_type(p_));
  out_dev.download(bits.raw_data(), bits.size_in_bytes());
  parallel_for(out_.size(), [&](size_t begin, size_t end, int) {
    for (size_t n = begin; n < end; ++n)
      out_[n] = bits.get(n);
  });
}

const std::vector<float> &Problem::reference() {
  if (have_ref_)
    return ref_;
  have_ref_ = true;
  gpu::DeviceBuffer ref_dev(size_t(s_.M) * s_.N * sizeof(float));
  ref_dev.fill_bytes(0xFF);
  reference::gemm(p_, s_.M, s_.N, s_.K, A_dev.as<void>(), B_dev.as<void>(), ref_dev.as<void>(), /*f32_output=*/true,
                  s_.b_nk);
  gpu::synchronize();
  ref_.resize(size_t(s_.M) * s_.N);
  ref_dev.download(ref_);

  // Its sampled rows against the double product (tf32: of the rounded inputs).
  std::vector<int> rows;
  for (int r = 0; r < kSampledRows; ++r)
    rows.push_back(static_cast<int>(int64_t(r) * (s_.M - 1) / (kSampledRows - 1)));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  // B as K x N, whichever way it is stored.
  std::vector<float> b(B_.size());
  parallel_for(size_t(s_.K), [&](size_t begin, size_t end, int) {
    for (size_t k = begin; k < end; ++k)
      for (int j = 0; j < s_.N; ++j)
        b[k * s_.N + j] = input(B_, s_.b_nk ? size_t(j) * s_.K + k : k * s_.N + j);
  });
  std::vector<double> expected(rows.size() * s_.N, 0.0);
  parallel_for(rows.size(), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r) {
      double *row = &expected[r * s_.N];
      for (int k = 0; k < s_.K; ++k) {
        const double a = input(A_, size_t(rows[r]) * s_.K + k);
        const float *b_row = &b[size_t(k) * s_.N];
        for (int j = 0; j < s_.N; ++j)
          row[j] += a * b_row[j];
      }
    }
  });
  std::vector<float> sampled(rows.size() * s_.N);
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy_n(ref_.begin() + size_t(rows[r]) * s_.N, s_.N, sampled.begin() + r * s_.N);
  Check c = compare(sampled.data(), rows.size(), s_.N, [&](size_t r, int j) { return expected[r * s_.N + j]; });
  c.tolerance = tolerance(p_, Comparison::CublasVsDouble);
  for (float v : ref_)
    c.not_finite += std::isfinite(v) ? 0 : 1;
  if (!c.ok())
    ref_error_ = std::string("the cuBLAS ") + reference::precision_name(p_) +
                 " f32-output reference failed its double-precision check: " + c.describe();
  return ref_;
}

const std::string &Problem::reference_error() {
  reference();
  return ref_error_;
}

Check Problem::check_against_reference(Function f, Comparison comparison) {
  const std::vector<float> &g = reference();
  const int N = s_.N;
  auto bias = [&](int j) { return double(bias_.get(size_t(j))); };
  Check c;
  switch (f) {
  case Function::Gemm:
    c = compare(out_.data(), s_.M, N, [&](size_t i, int j) { return double(g[i * N + j]); });
    break;
  case Function::GeluErf:
    c = compare(out_.data(), s_.M, N, [&](size_t i, int j) { return gelu_erf(double(g[i * N + j]) + bias(j)); });
    break;
  case Function::GeluTanh:
    c = compare(out_.data(), s_.M, N, [&](size_t i, int j) { return gelu_tanh(double(g[i * N + j]) + bias(j)); });
    break;
  }
  c.tolerance = tolerance(p_, comparison);
  return c;
}

Check Problem::check_small_k(int K) const {
  const int N = s_.N;
  Check c = compare(out_.data(), s_.M, N, [&](size_t i, int j) {
    double sum = 0;
    for (int k = 0; k < K; ++k)
      sum += double(input(A_, i * K + k)) * input(B_, s_.b_nk ? size_t(j) * K + k : size_t(k) * N + j);
    return gelu_erf(sum + bias_.get(size_t(j)));
  });
  c.tolerance = tolerance(p_, Comparison::OursVsDouble);
  return c;
}

} // namespace coalesce::bench
