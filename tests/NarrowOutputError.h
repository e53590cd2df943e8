#pragma once
// A GEMM pipeline run on the CPU into a poisoned output of any type (bf16,
// f16 or f32), widened to f32 and compared against the double reference:
// the relative error the numerical tests bound.

#include "examples/Reference.h"

namespace coalesce::testing {

/// `run` is what the pipeline reads; `data` holds the same values in the
/// reference's layout (B as K x N), which differs where the pipeline reads
/// B stored N x K.
inline double cpu_error_against_reference(Pipeline &pipeline, const examples::GemmData &run,
                                          const examples::GemmData &data, int M, int N, int K, examples::Epilogue e,
                                          Type out_type) {
  Buffer out({M, N}, out_type);
  out.poison();
  pipeline.realize_on_cpu(examples::gemm_arguments(run, M, N, K, e), out);
  Buffer wide({M, N});
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      wide(i, j) = out.at(i, j);
  return examples::relative_error(wide, examples::reference(data, M, N, K, e));
}

inline double cpu_error_against_reference(Pipeline &pipeline, const examples::GemmData &data, int M, int N, int K,
                                          examples::Epilogue e, Type out_type) {
  return cpu_error_against_reference(pipeline, data, data, M, N, K, e, out_type);
}

/// The same on bf16 inputs made with `seed`, into a bf16 output: the
/// warpgroup-MMA tests' GEMMs.
inline double bf16_error_against_reference(Pipeline &pipeline, int M, int N, int K, examples::Epilogue e,
                                           unsigned seed) {
  examples::GemmData data = examples::make_data(M, N, K, seed, BFloat(16));
  return cpu_error_against_reference(pipeline, data, M, N, K, e, BFloat(16));
}

} // namespace coalesce::testing
