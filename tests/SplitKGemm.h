#pragma once
// The split-K tests' GEMMs, shapes and helpers (test_split_k.cpp,
// test_split_k_combine_kernel.cpp, test_split_k_tail.cpp): small tiles, so that ragged shapes have
// several tiles and slices, and what a careless split would compute.

#include "dsl/FuncContents.h"
#include "dsl/NarrowFloat.h"
#include "dsl/recipes/GemmMmaSchedule.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/Reference.h"
#include "runtime/CudaDriver.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

namespace coalesce::testing {

using namespace coalesce::examples;

struct Shape {
  int M, N, K;
};

// Ragged everywhere: M and N overhang the tiles, K is not a multiple of the
// K step or of the split count, and is smaller than the split count, 0, 1, 3.
inline const Shape kShapes[] = {{1, 1, 1}, {37, 70, 0}, {37, 70, 1}, {37, 70, 3}, {17, 130, 50}, {70, 65, 203}};

inline Buffer run(Pipeline &pipeline, const GemmData &data, Shape s, Epilogue e) {
  Buffer out({s.M, s.N}, pipeline.output().contents()->type);
  out.poison();
  pipeline.realize_on_cpu(gemm_arguments(data, s.M, s.N, s.K, e), out);
  return out;
}

// A small tile, so that the shapes above have several tiles and slices.
inline GemmTiling ffma_tiling(int slices, SplitKMode mode) {
  GemmTiling t;
  t.block_m = 32;
  t.block_n = 64;
  t.threads_m = 8;
  t.threads_n = 16;
  t.split_k = slices;
  t.split_k_mode = mode;
  return t;
}

inline Gemm ffma_gemm(Epilogue e, const GemmTiling &t, bool fold_bias = false) {
  Gemm g = make_gemm(e);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  if (fold_bias)
    g.out.fold_bias_into_init();
  return g;
}

// What a careless split computes: the epilogue (bias included) applied to
// each slice's partial sum, and the results added.
inline Buffer epilogue_per_slice(const GemmData &data, Shape s, int slices, Epilogue e) {
  Buffer out({s.M, s.N});
  int chunk = (s.K + slices - 1) / slices;
  for (int i = 0; i < s.M; ++i)
    for (int j = 0; j < s.N; ++j) {
      double total = 0;
      for (int slice = 0; slice < slices; ++slice) {
        double partial = 0;
        for (int k = slice * chunk; k < std::min(s.K, (slice + 1) * chunk); ++k)
          partial += double(data.a(i, k)) * data.b(k, j);
        total += reference_epilogue<double>(e, partial, data.bias.values()[j]);
      }
      out(i, j) = static_cast<float>(total);
    }
  return out;
}

inline void round_to_tf32(Buffer &b) {
  for (float &v : b.values())
    v = float_to_tf32(v);
}

// A and B as `kind` reads them (the instruction table's operand type).
inline Type input_type(MmaKind kind) { return mma_instruction(kind).operand; }

// Data for `kind` at `s`: its operand type, f32 inputs rounded to tf32 as
// the instruction rounds them, so that the reference sees the same values.
inline GemmData mma_data(MmaKind kind, Shape s, uint32_t seed) {
  GemmData data = make_data(s.M, s.N, s.K, seed, input_type(kind));
  if (mma_rounds_to_tf32(kind)) {
    round_to_tf32(data.a);
    round_to_tf32(data.b);
  }
  return data;
}

inline Gemm mma_gemm(MmaKind kind, int slices, SplitKMode mode) {
  Gemm g = make_gemm(Epilogue::BiasGelu, input_type(kind), Float(32));
  MmaTiling t;
  t.kind = kind;
  t.block_m = 64;
  t.block_n = 64;
  t.warp_m = 32;
  t.warp_n = 32;
  t.k_step = 16;
  t.split_k = slices;
  t.split_k_mode = mode;
  schedule_gemm_mma(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, t);
  return g;
}

inline bool same_bits(const Buffer &a, const Buffer &b) {
  return a.size_in_bytes() == b.size_in_bytes() && std::memcmp(a.raw_data(), b.raw_data(), a.size_in_bytes()) == 0;
}

// On a GPU (skipped without one): two launches of `g` at 70 x 130 x 203
// give the same bits, and the reference's values.
inline void check_same_bits_on_gpu(const Gemm &g) {
  std::string why_not;
  if (!gpu::gpu_available(&why_not)) {
    MESSAGE("no GPU (", why_not, "): skipping");
    return;
  }
  Pipeline pipeline(g.out);
  Shape s{70, 130, 203};
  GemmData data = make_data(s.M, s.N, s.K, 9);
  Buffer first({s.M, s.N}), second({s.M, s.N});
  first.poison();
  second.poison();
  pipeline.realize_on_gpu(gemm_arguments(data, s.M, s.N, s.K, g.epilogue), first);
  pipeline.realize_on_gpu(gemm_arguments(data, s.M, s.N, s.K, g.epilogue), second);
  CHECK(same_bits(first, second));
  CHECK(relative_error(first, reference(data, s.M, s.N, s.K, g.epilogue)) < 1e-5);
}

} // namespace coalesce::testing
