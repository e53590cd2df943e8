// A batch of products on the FFMA schedule (schedule_gemm, f32 inputs):
// out(b, i, j) = gelu(sum over k of A(b, i, k) * B(b, k, j) + bias(j)), the
// batch the grid's outermost block dimension, either operand without the
// batch (one weight for the whole batch, or one A for many weights), B
// stored K x N or N x K. On the CPU, which runs the statements the GPU
// runs: each product gives the bits of the same schedule on that product
// alone, at ragged shapes and K = 0 / 1 / 3, and one case against the
// double reference; a split of K refused for a batch; the refusal for a
// GPU until the GPU check has run it, and its PTX assembled by ptxas once
// allowed.

#include "AssembledCleanly.h"
#include "BatchedReference.h"
#include "ErrorCapture.h"
#include "SplitKGemm.h"
#include "dsl/recipes/GemmSchedule.h"
#include "examples/BatchedGemm.h"
#include "runtime/Coalesce.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using namespace coalesce;

namespace {

using examples::BatchedGemm;
using examples::BatchedOperands;

struct Shape {
  int batch, M, N, K;
};

const BatchedOperands kOperands[] = {BatchedOperands::Both, BatchedOperands::BothWeightsNK, BatchedOperands::SharedA,
                                     BatchedOperands::SharedWeightsNK};

/// Runs the batch and each product alone on the CPU with tiling `t`; every
/// product of the batch has the bits of its product alone.
void check_against_each_product(const GemmTiling &t, BatchedOperands o, const Shape &s) {
  INFO(t.str(), ", ", examples::batched_operands_name(o), ", ", s.batch, " x ", s.M, " x ", s.N, " x ", s.K);
  BatchedGemm batched(Float(32), Float(32), o), alone(Float(32), Float(32), o, false);
  batched.schedule_ffma(t);
  alone.schedule_ffma(t);
  coalesce::testing::check_each_product_alone(batched, alone, Float(32), Float(32), s.batch, s.M, s.N, s.K);
}

GemmTiling medium_tiling() {
  GemmTiling t = default_gemm_tiling(4096, 4096, 4096, 132); // 128 x 128, 16 x 16 threads
  t.block_n = 64;
  t.threads_n = 8;
  return t;
}

} // namespace

TEST_CASE("each product of a batch on the FFMA schedule has the bits of that product alone") {
  const std::vector<Shape> shapes = {{3, 70, 75, 37}, {2, 130, 136, 64}, {2, 5, 9, 0}, {2, 5, 9, 1}, {2, 5, 9, 3}};
  for (BatchedOperands o : kOperands)
    for (const Shape &s : shapes) {
      check_against_each_product(default_gemm_tiling(0, 0, 0, 132), o, s);
      check_against_each_product(medium_tiling(), o, s);
    }
  // The few-rows tiling (16-row tiles) and a three-stage cp.async pipeline.
  GemmTiling deep = default_gemm_tiling(4096, 4096, 4096, 132);
  deep.stages = 3;
  for (BatchedOperands o : {BatchedOperands::Both, BatchedOperands::SharedWeightsNK}) {
    check_against_each_product(small_m_tiling(16), o, {3, 7, 75, 37});
    check_against_each_product(deep, o, {2, 131, 129, 67});
  }
}

TEST_CASE("a batch on the FFMA schedule against the double reference") {
  BatchedGemm p(Float(32), Float(32), BatchedOperands::BothWeightsNK);
  p.schedule_ffma(default_gemm_tiling(0, 0, 0, 132));
  CHECK(coalesce::testing::batched_error_against_double(p, Float(32), 3, 67, 72, 45) < 1e-4); // f32 sums of 45
}

TEST_CASE("a batch on the FFMA schedule: a split of K refused, naming the batch") {
  BatchedGemm p(Float(32), Float(32), BatchedOperands::Both);
  GemmTiling t = default_gemm_tiling(0, 0, 0, 132);
  t.split_k = 4;
  std::string message = coalesce::testing::user_error_of([&] { p.schedule_ffma(t); });
  CHECK_HAS(message, "schedule_gemm: 'out' is a batch of products (its dimension 'b')");
  CHECK_HAS(message, "a batch's products are not split: use split_k = 1");
}

TEST_CASE("for a GPU, a batch on the FFMA schedule takes the grid's z and assembles without spills") {
  BatchedGemm p(Float(32), Float(32), BatchedOperands::Both);
  p.schedule_ffma(default_gemm_tiling(0, 0, 0, 132));
  Pipeline pipeline(p.out);
  std::string ptx = pipeline.ptx();
  CHECK(ptx.find("%ctaid.z") != std::string::npos);
  // One product alone has no z.
  BatchedGemm one(Float(32), Float(32), BatchedOperands::Both, false);
  one.schedule_ffma(default_gemm_tiling(0, 0, 0, 132));
  CHECK(Pipeline(one.out).ptx().find("%ctaid.z") == std::string::npos);
  if (ptxas_available())
    coalesce::testing::check_assembled_cleanly(pipeline.assemble(parse_gpu_target("sm_90a")));
  else
    MESSAGE("ptxas not found: skipping the assembly");
}

TEST_CASE("a batch variable named like one of the recipe's loops is refused by name") {
  Param batch("Batch"), M("M"), N("N"), K("K");
  Var bi("bi"), i("i"), j("j");
  RDom k(0, K, "k");
  Input A("A", Float(32), {batch, M, K}), B("B", Float(32), {K, N});
  Func acc("acc"), out("out");
  acc(bi, i, j) = 0.0f;
  acc(bi, i, j) += A(bi, i, k) * B(k, j);
  out(bi, i, j) = acc(bi, i, j);
  std::string message = coalesce::testing::user_error_of(
      [&] { schedule_gemm(out, acc, A, B, i, j, k, default_gemm_tiling(0, 0, 0, 132)); });
  CHECK_HAS(message, "split reuses the name 'bi', which is already a loop or variable of 'out'");
}
