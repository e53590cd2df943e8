// Every example schedule, run on the CPU (serial semantics), against the
// double-precision reference at square, ragged and rectangular shapes; every
// fused epilogue also against the unfused chain at K = 1 and K = 3, the pair
// that exposes an epilogue placed inside the reduction.

#include "examples/Reference.h"
#include "examples/Schedules.h"
#include "dsl/recipes/GemmSchedule.h"

#include <doctest/doctest.h>

#include <map>
#include <memory>

using namespace coalesce;
using namespace coalesce::examples;

namespace {

constexpr double kTolerance = 1e-5;

struct Shape {
  int M, N, K;
};

// Shapes are runtime parameters, so each schedule is lowered and JIT-compiled
// once and its Pipeline reused for every shape and test case.
Pipeline &pipeline_for(const ExampleSchedule &schedule) {
  static std::map<std::string, std::unique_ptr<Pipeline>> pipelines;
  std::unique_ptr<Pipeline> &pipeline = pipelines[schedule.name];
  if (!pipeline)
    pipeline = std::make_unique<Pipeline>(scheduled_gemm(schedule).out);
  return *pipeline;
}

// Runs `schedule` at `shape` into a NaN-poisoned output.
Buffer run_on_cpu(const ExampleSchedule &schedule, const GemmData &data, Shape shape) {
  Buffer out({shape.M, shape.N});
  out.poison();
  pipeline_for(schedule).realize_on_cpu(gemm_arguments(data, shape.M, shape.N, shape.K, schedule.epilogue), out);
  return out;
}

// The epilogue applied after every K step instead of once after the sum: the
// mistake the K = 1 / K = 3 pair must catch.
Buffer misplaced_epilogue(const GemmData &data, Shape shape, Epilogue e) {
  Buffer out({shape.M, shape.N});
  for (int i = 0; i < shape.M; ++i)
    for (int j = 0; j < shape.N; ++j) {
      float partial = 0.0f;
      for (int k = 0; k < shape.K; ++k)
        partial = reference_epilogue<float>(e, partial + data.a(i, k) * data.b(k, j), data.bias.values()[j]);
      out(i, j) = partial;
    }
  return out;
}

} // namespace

TEST_CASE("every catalog schedule matches the double reference at every shape") {
  const Shape shapes[] = {{1, 1, 1}, {64, 64, 64}, {127, 129, 131}, {96, 200, 40}};
  for (const ExampleSchedule &schedule : example_schedules())
    for (Shape shape : shapes) {
      INFO("schedule '", schedule.name, "' at ", shape.M, "x", shape.N, "x", shape.K);
      GemmData data = make_data(shape.M, shape.N, shape.K, 11);
      Buffer out = run_on_cpu(schedule, data, shape);
      CHECK(count_nan(out) == 0);
      CHECK(relative_error(out, reference(data, shape.M, shape.N, shape.K, schedule.epilogue)) < kTolerance);
    }
}

TEST_CASE("every fused epilogue agrees with the unfused chain at K = 1 and K = 3") {
  int fused = 0;
  for (const ExampleSchedule &schedule : example_schedules()) {
    if (schedule.epilogue == Epilogue::None)
      continue;
    ++fused;
    for (int K : {1, 3}) {
      INFO("schedule '", schedule.name, "' (", epilogue_name(schedule.epilogue), ") at K = ", K);
      Shape shape{67, 45, K};
      GemmData data = make_data(shape.M, shape.N, K, 5);
      Buffer out = run_on_cpu(schedule, data, shape);
      CHECK(count_nan(out) == 0);
      CHECK(relative_error(out, unfused_chain(data, shape.M, shape.N, K, schedule.epilogue)) < kTolerance);
    }
  }
  CHECK(fused >= 4); // bias, relu, gelu, gelu_tanh at least
}

TEST_CASE("the K = 1 / K = 3 pair tells a misplaced epilogue from a fused one") {
  for (Epilogue e : {Epilogue::Bias, Epilogue::BiasRelu, Epilogue::BiasGelu, Epilogue::BiasGeluTanh}) {
    INFO("epilogue ", epilogue_name(e));
    for (int K : {1, 3}) {
      Shape shape{67, 45, K};
      GemmData data = make_data(shape.M, shape.N, K, 5);
      double error = relative_error(misplaced_epilogue(data, shape, e), unfused_chain(data, shape.M, shape.N, K, e));
      if (K == 1)
        CHECK(error < kTolerance); // K = 1 alone cannot see the mistake
      else
        CHECK(error > 1e-3); // K = 3 must
    }
  }
}

TEST_CASE("relative_error fails on an unwritten element and on a wrong shape") {
  GemmData data = make_data(5, 6, 7, 3);
  Buffer ref = reference(data, 5, 6, 7, Epilogue::BiasGelu);
  Buffer out = ref;
  CHECK(relative_error(out, ref) == 0);
  out(2, 3) = std::numeric_limits<float>::quiet_NaN();
  CHECK(count_nan(out) == 1);
  CHECK_FALSE(relative_error(out, ref) < kTolerance);
  CHECK_FALSE(relative_error(Buffer({5, 7}), ref) < kTolerance);
}

// The tuned default (dsl/recipes/GemmSchedule.h), which the main job, the AOT
// tool and the benchmark use, at each tiling the shape-aware choice makes and
// with both ways of double buffering (cp.async-style copies and registers):
// against the double reference at ragged shapes (K not a multiple of the
// K step, so the peeled tail runs), and at K = 1 / K = 3 against the chain.
TEST_CASE("the default GEMM schedule matches the reference at ragged shapes and the K=1/K=3 pair") {
  GemmTiling large = default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count());
  GemmTiling small = default_gemm_tiling(1024, 1024, 1024, GpuTarget().sm_count());
  GemmTiling through_registers = large;
  through_registers.async_copy = false;
  GemmTiling k16 = large;
  k16.k_step = 16;
  // The staging's other depths and the warp layouts (which the CPU runs in
  // their order too): one tile per step, and 3- and 4-stage pipelines.
  GemmTiling one_tile = small;
  one_tile.stages = 1;
  one_tile.async_copy = false;
  GemmTiling three_stages_in_4x8_warps = large;
  three_stages_in_4x8_warps.stages = 3;
  three_stages_in_4x8_warps.warp_rows = 4;
  three_stages_in_4x8_warps.warp_cols = 8;
  GemmTiling four_stages_in_8x4_warps = small;
  four_stages_in_8x4_warps.stages = 4;
  four_stages_in_8x4_warps.warp_rows = 8;
  four_stages_in_8x4_warps.warp_cols = 4;
  const Shape shapes[] = {{1, 1, 1}, {127, 129, 131}, {96, 200, 40}, {130, 67, 9}};
  for (const GemmTiling &tiling :
       {large, small, through_registers, k16, one_tile, three_stages_in_4x8_warps, four_stages_in_8x4_warps}) {
    for (Epilogue e : {Epilogue::BiasGelu, Epilogue::BiasRelu}) {
      INFO(tiling.str(), ", ", epilogue_name(e));
      Gemm g = make_gemm(e);
      schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, tiling);
      Pipeline pipeline(g.out);
      auto run = [&](const GemmData &data, Shape shape) {
        Buffer out({shape.M, shape.N});
        out.poison();
        pipeline.realize_on_cpu(gemm_arguments(data, shape.M, shape.N, shape.K, e), out);
        return out;
      };
      for (Shape shape : shapes) {
        INFO("shape ", shape.M, "x", shape.N, "x", shape.K);
        GemmData data = make_data(shape.M, shape.N, shape.K, 77);
        Buffer out = run(data, shape);
        CHECK(count_nan(out) == 0);
        CHECK(relative_error(out, reference(data, shape.M, shape.N, shape.K, e)) < kTolerance);
      }
      for (int K : {1, 3}) {
        Shape shape{67, 45, K};
        INFO("K = ", K);
        GemmData data = make_data(shape.M, shape.N, K, 5);
        CHECK(relative_error(run(data, shape), unfused_chain(data, shape.M, shape.N, K, e)) < kTolerance);
      }
    }
  }
}
