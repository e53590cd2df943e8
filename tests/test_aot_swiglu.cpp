// coalesce-aot's gemm with --epilogue=swiglu: y = silu(x Wg^T) * (x Wu^T) in
// one kernel (examples/SwiGlu.h on the warpgroup MMA with
// default_fused_gemms_tiling). PTX that ptxas accepts for sm_90a without
// spills; a header and launcher taking x, Wg, Wu, y, which compile with
// warnings as errors and pass the stand-in driver's checks
// (runtime/aot/testing/fake_driver_swiglu.cpp); the flags a SwiGLU cannot
// take, refused by name with nothing written; the algorithm and schedule
// the tool generates, checked on the CPU against a double reference.

#include "AotTool.h"
#include "AssembledCleanly.h"
#include "examples/SwiGlu.h"

#include <cmath>

using namespace aot_testing;

namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

size_t occurrences(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

} // namespace

TEST_CASE("coalesce-aot --help lists --epilogue=gemm|swiglu") {
  TempDir dir;
  Result help = aot("--help", dir.path);
  CHECK(help.status == 0);
  CHECK(help.contains("--epilogue="));
  CHECK(help.contains("gemm|swiglu"));
  CHECK(help.contains("a SwiGLU MLP's gate and up projections in one kernel"));
}

TEST_CASE("gemm --epilogue=swiglu: x, Wg, Wu, y in that order, bf16 typedefs, ptxas-clean warpgroup PTX") {
  TempDir dir;
  Result result = aot("--epilogue=swiglu --dtype=bf16 --out-dtype=bf16 --name=swiglu --output-dir=.", dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  CHECK(dir.entries() == std::vector<std::string>{"swiglu.cpp", "swiglu.h", "swiglu.ptx"});
  std::string header = read_file(dir / "swiglu.h");
  for (const char *line :
       {"CUresult swiglu(coalesce_bf16_deviceptr x, coalesce_bf16_deviceptr Wg, coalesce_bf16_deviceptr Wu, "
        "coalesce_bf16_deviceptr y,\n                int M, int N, int K, CUstream stream);",
        "//   x  input  bf16 [M][K]\n//   Wg input  bf16 [N][K]\n//   Wu input  bf16 [N][K]\n//   y  output bf16 "
        "[M][N]",
        "--epilogue=swiglu --dtype=bf16 --out-dtype=bf16", "grid (ceil(N/128), ceil(M/128), 1) blocks of (32, 8, 1)"}) {
    INFO(line);
    CHECK(has(header, line));
  }
  // The regenerating command line gives none of the flags a SwiGLU refuses,
  // and regenerates the same launcher.
  std::string regenerate = header.substr(header.find("//   coalesce-aot ") + 18);
  regenerate = regenerate.substr(0, regenerate.find('\n'));
  for (const char *flag : {"--bias", "--activation", "--residual", "--b=", "--scales", "--split-k", "--autotune"}) {
    INFO(flag);
    CHECK_FALSE(has(regenerate, flag));
  }
  Result again = aot(regenerate + " --emit=header", dir.path);
  INFO(again.err);
  CHECK(again.status == 0);
  CHECK(again.out == header);

  std::string launcher = read_file(dir / "swiglu.cpp");
  // The kernel keeps the pipeline's order; each pointer goes by name.
  CHECK(has(launcher, "void *params0_[] = {&Wg, &Wu, &x, &y, &K_value_, &M_value_, &N_value_, &map0_0_.map, "
                      "&map0_1_.map, &map0_2_.map};"));
  CHECK(has(launcher, "the output y overlaps the input Wu"));
  std::string ptx = read_file(dir / "swiglu.ptx");
  // One instruction per sum for each k16 of a 64-element step, per warpgroup tile.
  CHECK(occurrences(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") >= 8);
  CHECK(has(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile"));
  // No injected warpgroup arrive or wait: each accumulator's first value
  // comes out of an instruction of its own.
  if (can_assemble())
    coalesce::testing::check_assembled_cleanly(assemble_ptx(ptx, parse_gpu_target("sm_90a")), 1);
  if (can_compile_launchers())
    check_launcher_builds(dir, "swiglu", "swiglu(0, 0, 0, 0, 1, 1, 1, 0)");
}

TEST_CASE("gemm --epilogue=swiglu --dtype=f16 --out-dtype=f32 at a ragged fixed shape: padded copies, clean PTX") {
  TempDir dir;
  Result result = aot("--epilogue=swiglu --dtype=f16 --out-dtype=f32 --M=70 --N=75 --K=37 --b=nk --name=swiglu_f16 "
                      "--output-dir=.",
                      dir.path);
  INFO(result.err);
  REQUIRE(result.status == 0);
  std::string header = read_file(dir / "swiglu_f16.h");
  CHECK(has(header, "CUresult swiglu_f16(coalesce_f16_deviceptr x, coalesce_f16_deviceptr Wg, coalesce_f16_deviceptr "
                    "Wu, CUdeviceptr y,"));
  // Rows of 37 and 75 elements are no 16-byte multiple: kernels of their own
  // copy x, Wg and Wu into the caller's workspace, rows padded, for the TMA.
  CHECK(has(header, "CUdeviceptr workspace, CUstream stream);"));
  std::string ptx = read_file(dir / "swiglu_f16.ptx");
  CHECK(has(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"));
  if (can_assemble()) // the SwiGLU's kernel and three copies
    coalesce::testing::check_assembled_cleanly(assemble_ptx(ptx, parse_gpu_target("sm_90a")), 4);
  if (can_compile_launchers())
    check_launcher_builds(dir, "swiglu_f16", "swiglu_f16(0, 0, 0, 0, 70, 75, 37, 0, 0)");
}

TEST_CASE("gemm --epilogue=swiglu: a flag it cannot take is named, and nothing is written") {
  struct Bad {
    const char *args;
    const char *message;
  };
  const Bad cases[] = {
      {"--epilogue=swiglu", "--epilogue=swiglu with --dtype=f32 (the default): the SwiGLU runs on the warpgroup MMA "
                            "with 16-bit inputs: give --dtype=bf16 or --dtype=f16"},
      {"--epilogue=swiglu --dtype=f32", "--epilogue=swiglu with --dtype=f32: the SwiGLU"},
      {"--epilogue=swiglu --dtype=tf32", "--epilogue=swiglu with --dtype=tf32"},
      {"--epilogue=swiglu --dtype=e4m3", "--epilogue=swiglu with --dtype=e4m3"},
      {"--epilogue=swiglu --dtype=e5m2 --b=nk", "--epilogue=swiglu with --dtype=e5m2"},
      {"--epilogue=swiglu --dtype=bf16 --target=sm_80", "--epilogue=swiglu --target=sm_80: the SwiGLU runs on "
                                                        "Hopper's warpgroup MMA (wgmma), which only sm_90a has"},
      {"--epilogue=swiglu --dtype=f16 --target=sm_90", "--epilogue=swiglu --target=sm_90"},
      {"--epilogue=swiglu --dtype=bf16 --mma=warp", "--epilogue=swiglu --mma=warp: the warp MMA's tiling would hold "
                                                    "both sums' accumulators"},
      {"--epilogue=swiglu --dtype=bf16 --bias", "--bias with --epilogue=swiglu: the SwiGLU's epilogue is silu(g) * u, "
                                                "with no bias: leave --bias out"},
      {"--epilogue=swiglu --dtype=bf16 --bias=false", "--bias with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --activation=relu", "--activation=relu with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --activation=silu", "leave --activation out"},
      {"--epilogue=swiglu --dtype=bf16 --residual", "--residual with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --scales=none", "--scales=none with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --b=kn", "--b=kn with --epilogue=swiglu: Wg and Wu are stored N x K"},
      {"--epilogue=swiglu --dtype=bf16 --split-k=2", "--split-k=2 with --epilogue=swiglu: two fused sums are not "
                                                     "split across blocks"},
      {"--epilogue=swiglu --dtype=bf16 --M=64 --N=64 --K=8192 --split-k=0", "--split-k=0 with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --split-k-mode=atomic", "--split-k-mode with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --M=64 --N=64 --K=64 --tuning-db=db.json",
       "--tuning-db and --autotune with --epilogue=swiglu: they tune single GEMMs"},
      {"--epilogue=swiglu --dtype=bf16 --autotune", "--tuning-db and --autotune with --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --swap-ab=false", "--swap-ab with --epilogue=swiglu: the single GEMM's decode rule"},
      {"--epilogue=swiglu --dtype=bf16 --warp-layout=4x8", "leave it out for --epilogue=swiglu"},
      {"--epilogue=swiglu --dtype=bf16 --M=65536 --K=65536", "make x 4294967296 elements"},
      {"--epilogue=glu", "--epilogue=glu: expected one of gemm, swiglu"},
  };
  for (const Bad &bad : cases)
    check_refused(bad.args, bad.message);
}

TEST_CASE("--epilogue=gemm is the default: the single GEMM's launcher is unchanged") {
  TempDir dir;
  Result plain = aot("--dtype=bf16 --out-dtype=bf16 --b=nk --emit=header --name=linear", dir.path);
  Result named = aot("--epilogue=gemm --dtype=bf16 --out-dtype=bf16 --b=nk --emit=header --name=linear", dir.path);
  INFO(plain.err, named.err);
  REQUIRE(plain.status == 0);
  REQUIRE(named.status == 0);
  CHECK(has(plain.out, "CUresult linear(coalesce_bf16_deviceptr A, coalesce_bf16_deviceptr B, CUdeviceptr bias, "
                       "coalesce_bf16_deviceptr out,"));
  CHECK(has(plain.out, "--epilogue=gemm --bias=true --residual=false --a=mk --b=nk --activation=gelu"));
  CHECK(plain.out == named.out);
}

TEST_CASE("the SwiGLU launcher passes the stand-in driver's checks: argument order, overlaps, three tensor maps") {
  if (!can_compile_launchers())
    return;
  TempDir dir;
  Result generated = aot("--name=swiglu --epilogue=swiglu --dtype=bf16 --out-dtype=bf16 --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  check_fake_driver_passes(dir.path, "fake_driver_swiglu", "swiglu.cpp", "SwiGLU launcher checks passed");
}

TEST_CASE("the SwiGLU coalesce-aot generates matches the double reference on the CPU (ragged, K = 1, K = 3)") {
  // As the tool builds it with the sizes left to run time: examples::SwiGlu
  // on default_fused_gemms_tiling for an unknown shape.
  struct Form {
    Type in, out;
    double tolerance; // f32 sums of exact products; a 16-bit output rounds once (2^-9)
  };
  for (const Form &form : {Form{BFloat(16), BFloat(16), 4e-3}, Form{Float(16), Float(32), 1e-5}}) {
    CAPTURE(form.in);
    examples::SwiGlu swiglu(form.in, form.out);
    swiglu.schedule_mma(default_fused_gemms_tiling(mma_kind_for(form.in, true), 0, 0, 132));
    Pipeline pipeline(swiglu.y);
    for (auto [M, N, K] : {std::tuple{70, 75, 37}, std::tuple{67, 45, 1}, std::tuple{67, 45, 3}}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      double error = examples::swiglu_error(
          form.in, form.out, M, N, K, [&](const Arguments &args, Buffer &y) { pipeline.realize_on_cpu(args, y); });
      CHECK(error < form.tolerance);
    }
  }
}

TEST_CASE("the example app's SwiGLU driver (example_app/swiglu_main.cpp) builds against a generated launcher") {
  if (!can_compile_launchers())
    return;
  if (!fs::exists(cuda_stubs() + "/libcuda.so")) {
    MESSAGE("skipped: no ", cuda_stubs(), "/libcuda.so to link the example app against");
    return;
  }
  // As scripts/run_on_gpu.sh builds it on the GPU machine.
  TempDir dir;
  Result generated = aot("--name=swiglu --epilogue=swiglu --dtype=bf16 --out-dtype=bf16 --output-dir=.", dir.path);
  INFO(generated.err);
  REQUIRE(generated.status == 0);
  Result built = run("g++ -std=c++17 -O2 -Wall -Wextra -Werror -I. -I" + quote(cuda_include()) + " " +
                         quote(kAotSources + "/example_app/swiglu_main.cpp") + " swiglu.cpp -L" + quote(cuda_stubs()) +
                         " -lcuda -o example_app",
                     dir.path);
  INFO(built.err);
  CHECK(built.status == 0);
  CHECK(fs::exists(dir / "example_app"));
}
