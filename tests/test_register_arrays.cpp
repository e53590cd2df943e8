// Register arrays emitted as SSA values (codegen/RegisterArrays.h): an
// array in registers indexed only by constants gets no alloca, on the host
// and on the GPU, and the values it carries through loops and branches (phis)
// are the ones the schedule computes: checked against the reference at
// ragged shapes and with the K = 1 / K = 3 pair.

#include "examples/Reference.h"
#include "dsl/recipes/GemmSchedule.h"

#include <doctest/doctest.h>

#include "ErrorCapture.h"

using namespace coalesce;
using namespace coalesce::examples;

namespace {

// acc computed per 4 x 4 tile of out in registers, its element loops
// unrolled (so it is indexed by constants) around the serial k loop, which
// carries the 16 values; ragged tiles are guarded by ifs.
Gemm register_tiled(Epilogue e) {
  Gemm g = make_gemm(e);
  Var io("io"), jo("jo"), ii("ii"), ji("ji");
  g.out.tile(g.i, g.j, io, jo, ii, ji, 4, 4).unroll(ii).unroll(ji);
  g.out.fuse_epilogue(g.acc, jo);
  g.acc.unroll(ii).unroll(ji);
  g.acc.update().reorder({g.k, ii, ji}).unroll(ii).unroll(ji);
  return g;
}

} // namespace

TEST_CASE("a register tile indexed by constants is SSA values on the host, and computes the reference") {
  for (Epilogue e : {Epilogue::BiasGelu, Epilogue::None}) {
    INFO(epilogue_name(e));
    Gemm g = register_tiled(e);
    Pipeline pipeline(g.out);
    std::string ir = pipeline.host_llvm_ir(false);
    CHECK(ir.find("alloca") == std::string::npos);
    CHECK(ir.find("phi") != std::string::npos);
    auto run = [&](const GemmData &data, int M, int N, int K) {
      Buffer out({M, N});
      out.poison();
      pipeline.realize_on_cpu(gemm_arguments(data, M, N, K, e), out);
      return out;
    };
    for (int M : {1, 7, 12})
      for (int K : {1, 3, 9}) {
        INFO("M = ", M, ", K = ", K);
        GemmData data = make_data(M, 6, K, 21);
        Buffer out = run(data, M, 6, K);
        CHECK(count_nan(out) == 0);
        CHECK(relative_error(out, reference(data, M, 6, K, e)) < 1e-5);
        CHECK(relative_error(out, unfused_chain(data, M, 6, K, e)) < 1e-5);
      }
  }
}

TEST_CASE("the default FFMA kernel's accumulators are SSA values, its inner product fused multiply-adds") {
  Gemm g = make_gemm(Epilogue::BiasGelu);
  schedule_gemm(g.out, g.acc, g.A, g.B, g.i, g.j, g.k, default_gemm_tiling(4096, 4096, 4096, GpuTarget().sm_count()));
  std::string ir = Pipeline(g.out).gpu_llvm_ir(parse_gpu_target("sm_90a"), false);
  CHECK(ir.find("alloca") == std::string::npos);
  CHECK(ir.find("llvm.fmuladd.f32") != std::string::npos);
  // The index arithmetic of the unrolled body, emitted once per block and
  // operands: far fewer than one remainder per staged element (336 before).
  size_t remainders = 0;
  for (size_t at = ir.find("srem"); at != std::string::npos; at = ir.find("srem", at + 1))
    ++remainders;
  CHECK(remainders < 100);
}
