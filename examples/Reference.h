#pragma once
// What every example schedule is checked against: a naive reference in
// double precision, the error measure, and the unfused chain in float (the
// GEMM, then the epilogue, as separate steps) for the K=1 / K=3 check.

#include "examples/Gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace coalesce::examples {

/// The epilogue on one finished sum, in type T (double for the reference,
/// float for the unfused chain). GELU is the exact erf form; gelu_tanh the
/// tanh approximation, as dsl/Activations.h defines them.
template <typename T> T reference_epilogue(Epilogue e, T sum, T bias) {
  const T half = T(0.5), one = T(1);
  switch (e) {
  case Epilogue::None:
    return sum;
  case Epilogue::Bias:
    return sum + bias;
  case Epilogue::BiasRelu:
    return std::max(sum + bias, T(0));
  case Epilogue::BiasGelu: {
    T x = sum + bias;
    return half * x * (one + std::erf(x / std::sqrt(T(2))));
  }
  case Epilogue::BiasGeluTanh: {
    T x = sum + bias;
    const T c = std::sqrt(T(2) / T(3.14159265358979323846));
    return half * x * (one + std::tanh(c * (x + T(0.044715) * x * x * x)));
  }
  }
  return sum;
}

/// out = epilogue(A * B + bias), summed and activated in double from the
/// inputs' exact values (a bf16/f16 input widened exactly), then rounded
/// once to float. Compare a bf16/f16 output with it at that type's
/// tolerance: the output's own rounding is part of the error.
inline Buffer reference(const GemmData &data, int M, int N, int K, Epilogue e) {
  Buffer out({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0;
      for (int k = 0; k < K; ++k)
        sum += static_cast<double>(data.a.at(i, k)) * data.b.at(k, j);
      out(i, j) = static_cast<float>(reference_epilogue<double>(e, sum, data.bias.get(j)));
    }
  return out;
}

/// The unfused chain in float: acc = A * B summed in k order (as the
/// algorithm writes it), stored; then the epilogue on each stored element.
/// A fused schedule must agree with it at K = 1 and K = 3 alike; an epilogue
/// that landed inside the reduction agrees at K = 1 only.
inline Buffer unfused_chain(const GemmData &data, int M, int N, int K, Epilogue e) {
  Buffer acc({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k)
        sum += data.a.at(i, k) * data.b.at(k, j);
      acc(i, j) = sum;
    }
  Buffer out({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      out(i, j) = reference_epilogue<float>(e, acc(i, j), data.bias.get(j));
  return out;
}

/// The number of NaN elements: with the output poisoned before a run, an
/// element the schedule never wrote.
inline size_t count_nan(const Buffer &out) {
  size_t count = 0;
  for (size_t n = 0; n < out.size(); ++n)
    count += std::isnan(out.get(n)) ? 1 : 0;
  return count;
}

/// ||out - ref|| / ||ref|| (Frobenius norms). A NaN anywhere in either, or a
/// shape mismatch, gives +infinity, so that any tolerance check fails.
inline double relative_error(const Buffer &out, const Buffer &ref) {
  const double failed = std::numeric_limits<double>::infinity();
  if (out.shape() != ref.shape())
    return failed;
  double diff = 0, norm = 0;
  for (size_t n = 0; n < out.size(); ++n) {
    double o = out.get(n), r = ref.get(n);
    if (std::isnan(o) || std::isnan(r))
      return failed;
    diff += (o - r) * (o - r);
    norm += r * r;
  }
  if (norm == 0)
    return diff == 0 ? 0 : failed;
  return std::sqrt(diff / norm);
}

} // namespace coalesce::examples
